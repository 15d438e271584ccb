package server_test

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

func dirCreate(name string) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.DesiredAccess = fscc.FileAllAccess
	req.CreateOptions = smb2.FileDirectoryFile
	req.CreateDisposition = smb2.FileCreate
	return req
}

func notifyAny() *smb2.ChangeNotifyRequest {
	return &smb2.ChangeNotifyRequest{Flags: smb2.WatchTree, OutputBufferLength: 4096, FileID: smb2.AnyFileID, CompletionFilter: 3}
}

// TestCompoundInterimWithEarlierResponses: when the last request of a
// compound goes async, the responses before it go out at once, compounded
// with its interim response; CANCEL then ends it (smbtorture
// smb2.compound.interim1).
func TestCompoundInterimWithEarlierResponses(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	hs := related(c, smb2.CmdCreate, smb2.CmdChangeNotify)
	rhs, _ := c.SendCompound(hs, [][]byte{servertest.Body(dirCreate("interim1")), servertest.Body(notifyAny())})
	if len(rhs) != 2 || rhs[0].Status != 0 || smb2.Status(rhs[1].Status) != smb2.StatusPending || !rhs[1].IsAsync() {
		t.Fatalf("compound answered %v (%d responses)", statuses(rhs), len(rhs))
	}
	if rhs[1].Flags&smb2.FlagRelatedOperations == 0 {
		t.Errorf("interim response lacks SMB2_FLAGS_RELATED_OPERATIONS")
	}
	cancel := c.Header(smb2.CmdCancel)
	cancel.MessageID, cancel.Flags, cancel.AsyncID, cancel.TreeID = hs[1].MessageID, smb2.FlagAsyncCommand, rhs[1].AsyncID, 0
	if _, err := c.Post(cancel, servertest.Body(&smb2.CancelRequest{})); err != nil {
		t.Fatal(err)
	}
	final, _, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(final) != 1 || final[0].MessageID != hs[1].MessageID || smb2.Status(final[0].Status) != smb2.StatusCancelled {
		t.Fatalf("after CANCEL: %v mid %d", statuses(final), final[0].MessageID)
	}
}

// TestCompoundInteriorWait: a CHANGE_NOTIFY that would wait inside a
// compound, not last, fails with STATUS_INTERNAL_ERROR and the compound
// goes on (smbtorture smb2.compound.interim2, Windows behaviour).
func TestCompoundInteriorWait(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	hs := related(c, smb2.CmdCreate, smb2.CmdChangeNotify, smb2.CmdQueryInfo)
	qi := &smb2.QueryInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileBasicInformation, OutputBufferLength: 4096, FileID: smb2.AnyFileID}
	rhs, _ := c.SendCompound(hs, [][]byte{servertest.Body(dirCreate("interim2")), servertest.Body(notifyAny()), servertest.Body(qi)})
	want := []smb2.Status{smb2.StatusSuccess, smb2.StatusInternalError, smb2.StatusSuccess}
	got := statuses(rhs)
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("statuses %v, want %v", got, want)
	}
}

// TestCompoundLastPadded: every response of a compound is padded to 8
// bytes, the last one too (smbtorture smb2.compound.compound-padding: a
// 3-byte READ's body is 24 bytes).
func TestCompoundLastPadded(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	fid, err := c.Create("padded")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(fid, 0, []byte("123")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
	hs := related(c, smb2.CmdCreate, smb2.CmdRead)
	rhs, pdus := c.SendCompound(hs, [][]byte{
		servertest.Body(servertest.CreateRequest("padded")),
		servertest.Body(&smb2.ReadRequest{FileID: smb2.AnyFileID, Length: 3, MinimumCount: 1}),
	})
	if got := statuses(rhs); len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("statuses %v", got)
	}
	if n := len(pdus[1]) - smb2.HeaderSize; n != 24 {
		t.Fatalf("last READ response body is %d bytes, want 24", n)
	}
	// A lone response is not padded.
	fid, err = c.Create("padded")
	if err != nil {
		t.Fatal(err)
	}
	h, pdu := c.Call(smb2.CmdRead, &smb2.ReadRequest{FileID: fid, Length: 3})
	if h.Status != 0 || len(pdu)-smb2.HeaderSize != 16+3 {
		t.Fatalf("lone READ: %v, body %d bytes", smb2.Status(h.Status), len(pdu)-smb2.HeaderSize)
	}
}

// TestChannelLimit: a session has at most 32 channels; binding a 33rd
// fails with STATUS_INSUFFICIENT_RESOURCES and leaves the others working
// (smbtorture smb2.multichannel.generic.num_channels).
func TestChannelLimit(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	for i := 2; i <= 33; i++ {
		c := secondChannel(t, srv, c1, smb2.Dialect311)
		err := c.Bind(c1.Session, servertest.Alice, servertest.AlicePassword)
		if i <= 32 && err != nil {
			t.Fatalf("channel %d: %v", i, err)
		}
		if i == 33 && !errors.Is(err, smb2.StatusInsufficientResources) {
			t.Fatalf("channel 33: %v, want STATUS_INSUFFICIENT_RESOURCES", err)
		}
	}
	if err := c1.Echo(); err != nil {
		t.Fatal(err)
	}
}
