package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestShutdownAnswersInFlight: Shutdown lets the requests being served
// finish: a WRITE the server had read when the shutdown began is written
// to its file and answered, the connection then ends with a FIN (not a
// reset, though the client sent a request the server no longer read), a
// CHANGE_NOTIFY waiting on an idle connection is answered
// STATUS_CANCELLED, and Shutdown returns without its deadline. Both a
// WRITE served by the read loop and one handed to a goroutine are tried.
func TestShutdownAnswersInFlight(t *testing.T) {
	for _, size := range []int{64 << 10, 1 << 20} {
		t.Run(sizeName(size), func(t *testing.T) { testShutdownAnswersInFlight(t, size) })
	}
}

func testShutdownAnswersInFlight(t *testing.T, size int) {
	root := t.TempDir()
	srv := servertest.Start(t, servertest.Options{DiskRoot: root})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
	fid, err := c.Create("inflight")
	if err != nil {
		t.Fatal(err)
	}
	watcher := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.DiskShareName, smb2.Dialect311)
	dir := servertest.CreateRequest("")
	dir.DesiredAccess, dir.CreateDisposition, dir.CreateOptions = smb2.FileReadAttributes|smb2.FileListDirectory, smb2.FileOpen, smb2.FileDirectoryFile
	dr, err := watcher.CreateWith(dir)
	if err != nil {
		t.Fatal(err)
	}
	notify := watcher.Header(smb2.CmdChangeNotify)
	if _, err := watcher.Post(notify, servertest.Body(&smb2.ChangeNotifyRequest{OutputBufferLength: 4096, FileID: dr.FileID, CompletionFilter: 0x17})); err != nil {
		t.Fatal(err)
	}
	interim, err := watcher.ReadFrame()
	var ih smb2.Header
	if err != nil || ih.Decode(interim) != nil || smb2.Status(ih.Status) != smb2.StatusPending {
		t.Fatalf("CHANGE_NOTIFY's interim response: %v %v", smb2.Status(ih.Status), err)
	}

	data := bytes.Repeat([]byte("acknowledged"), size/12+1)[:size]
	hdr := c.Header(smb2.CmdWrite)
	hdr.CreditCharge = c.Charge(size)
	entered, release := make(chan struct{}), make(chan struct{})
	srv.SetOrderHooks(t, server.OrderHooks{OpenResolved: func(mid uint64) {
		if mid == hdr.MessageID {
			close(entered)
			<-release
		}
	}})
	if _, err := c.Post(hdr, servertest.Body(&smb2.WriteRequest{FileID: fid, Data: data})); err != nil {
		t.Fatal(err)
	}
	<-entered // read, not yet written

	shut := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), servertest.DefaultTimeout)
	defer cancel()
	go func() { shut <- srv.Shutdown(ctx) }()
	waitFor(t, "the shutdown to reach every connection", srv.Stopping)
	// Sent after the server stopped reading: never answered.
	if _, err := c.Post(c.Header(smb2.CmdEcho), servertest.Body(&smb2.EchoRequest{})); err != nil {
		t.Fatal(err)
	}
	close(release)

	hs, pdus, err := c.Recv()
	if err != nil {
		t.Fatalf("the in-flight WRITE's response: %v", err)
	}
	var wr smb2.WriteResponse
	if hs[0].MessageID != hdr.MessageID || hs[0].Status != 0 || wr.Decode(pdus[0]) != nil || int(wr.Count) != size {
		t.Fatalf("in-flight WRITE answered %v mid %d (count %d), want success for mid %d", smb2.Status(hs[0].Status), hs[0].MessageID, wr.Count, hdr.MessageID)
	}
	if _, err := c.ReadFrame(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last response: %v, want the end of the stream (a FIN, not a reset)", err)
	}
	nh, _, err := watcher.Recv()
	if err != nil || len(nh) != 1 || smb2.Status(nh[0].Status) != smb2.StatusCancelled {
		t.Errorf("the waiting CHANGE_NOTIFY: %v %v, want STATUS_CANCELLED", nh, err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(root, "inflight"))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("the file holds %d bytes (%v), want the %d acknowledged", len(got), err, size)
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	return "64KiB"
}
