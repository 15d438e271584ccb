package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// TestWindowsSemanticsAcrossNodes: the times and security descriptors a
// client sets or a file inherits through one node are the ones a client of
// another node sees and is checked against — they live with the file, not
// with the node that served the CREATE.
func TestWindowsSemanticsAcrossNodes(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 2})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "hana", "--password", "Hana-Pass-1")
	a := clusterSession(t, c.Nodes[0], "hana", "Hana-Pass-1", "data")
	b := clusterSession(t, c.Nodes[1], "hana", "Hana-Pass-1", "data")

	// A rename that would replace a file open through the other node is
	// refused STATUS_ACCESS_DENIED ([MS-FSCC] 2.4.42), as it is on one
	// node: the opener's handle would name a file out of the namespace.
	// An open that looks at the target's attributes only does not count.
	t.Run("RenameOverOpenFile", func(t *testing.T) {
		const share = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
		for i := range 6 { // files over the owners
			target, src := fmt.Sprintf("target-%d.txt", i), fmt.Sprintf("new-%d.txt", i)
			ft, err := a.Create(target)
			if err != nil {
				t.Fatal(err)
			}
			req := servertest.CreateRequest(src)
			req.ShareAccess = share
			resp, err := b.CreateWith(req)
			if err != nil {
				t.Fatal(err)
			}
			rename := func() smb2.Status {
				h, _ := b.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileRenameInformation,
					Buffer: servertest.Body(&fscc.RenameInformation{FileName: target, ReplaceIfExists: true}), FileID: resp.FileID})
				return smb2.Status(h.Status)
			}
			if st := rename(); st != smb2.StatusAccessDenied {
				t.Errorf("%s: rename through node 2 over the file open through node 1: %v, want STATUS_ACCESS_DENIED", target, st)
			}
			a.CloseFile(ft)
			look := servertest.CreateRequest(target)
			look.DesiredAccess, look.ShareAccess, look.CreateDisposition = smb2.FileReadAttributes, share, smb2.FileOpen
			lr, err := a.CreateWith(look)
			if err != nil {
				t.Fatal(err)
			}
			if st := rename(); st != smb2.StatusSuccess {
				t.Errorf("%s: rename through node 2 over the file node 1 looks at only: %v", target, st)
			}
			a.CloseFile(lr.FileID)
			b.CloseFile(resp.FileID)
		}
	})

	t.Run("Timestamps", func(t *testing.T) {
		fa, err := a.Create("times.txt")
		if err != nil {
			t.Fatal(err)
		}
		// A LastWriteTime past 2262 set through node 1 stays through
		// node 1's writes, and node 2 reads it exactly.
		set := fscc.Filetime(time.Unix(10000000000, 0))
		setBasic(t, a, fa, &fscc.BasicInformation{LastWriteTime: set})
		if _, err := a.Write(fa, 0, []byte("data")); err != nil {
			t.Fatal(err)
		}
		fb, err := b.Create("times.txt")
		if err != nil {
			t.Fatal(err)
		}
		if got := basicOf(t, b, fb).LastWriteTime; got != set {
			t.Fatalf("LastWriteTime through node 2: %v, want %v", fscc.TimeOf(got), fscc.TimeOf(set))
		}
		// Node 2's first write leaves the time until its CLOSE, which
		// sets it ([MS-FSA] 2.1.4.17); node 1 then reads the new time.
		if _, err := b.Write(fb, 4, []byte("more")); err != nil {
			t.Fatal(err)
		}
		if got := basicOf(t, a, fa).LastWriteTime; got != set {
			t.Fatalf("LastWriteTime through node 1 after node 2's write: %v, want %v", fscc.TimeOf(got), fscc.TimeOf(set))
		}
		before := fscc.Filetime(time.Now().Add(-time.Minute))
		b.CloseFile(fb)
		if got := basicOf(t, a, fa).LastWriteTime; got == set || got < before {
			t.Fatalf("LastWriteTime after node 2's close: %v", fscc.TimeOf(got))
		}
		a.CloseFile(fa)
	})

	t.Run("Inheritance", func(t *testing.T) {
		req := servertest.CreateRequest("dir")
		req.CreateOptions = smb2.FileDirectoryFile
		req.DesiredAccess = smb2.ReadControl | smb2.WriteDAC
		dir, err := a.CreateWith(req)
		if err != nil {
			t.Fatal(err)
		}
		// CREATOR OWNER may do anything with the files made in the
		// directory; Everyone may only read them.
		dacl := &fscc.ACL{Revision: fscc.ACLRevision, ACEs: []fscc.ACE{
			{Type: fscc.AccessAllowedACEType, Flags: fscc.ObjectInheritACE | fscc.InheritOnlyACE, Mask: smb2.GenericAll, SID: fscc.SIDCreatorOwner},
			{Type: fscc.AccessAllowedACEType, Flags: fscc.ObjectInheritACE, Mask: fscc.FileGenericRead | fscc.FileWriteData, SID: fscc.SIDEveryone},
		}}
		sd := fscc.SecurityDescriptor{Control: fscc.SESelfRelative | fscc.SEDACLPresent, DACL: dacl}
		h, _ := a.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoSecurity, AdditionalInformation: fscc.DACLSecurityInformation,
			FileID: dir.FileID, Buffer: sd.Bytes()})
		if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
			t.Fatalf("SET_INFO of the directory's DACL: %v", st)
		}
		a.CloseFile(dir.FileID)
		// The file made through node 2 inherits: its creator gets all,
		// Everyone reads; the directory's DACL is not auto-inherited, so
		// the ACEs carry no INHERITED_ACE ([MS-DTYP] 2.5.3.4.2).
		fr := servertest.CreateRequest(`dir\child.txt`)
		fr.DesiredAccess = smb2.ReadControl
		f, err := b.CreateWith(fr)
		if err != nil {
			t.Fatal(err)
		}
		b.CloseFile(f.FileID)
		qr := servertest.CreateRequest(`dir\child.txt`)
		qr.CreateDisposition = smb2.FileOpen
		qr.DesiredAccess = smb2.ReadControl
		qr.Contexts = []smb2.CreateContext{{Name: "MxAc"}}
		q, err := a.CreateWith(qr)
		if err != nil {
			t.Fatal(err)
		}
		defer a.CloseFile(q.FileID)
		h, pdu := a.Call(smb2.CmdQueryInfo, &smb2.QueryInfoRequest{InfoType: smb2.InfoSecurity,
			AdditionalInformation: fscc.OwnerSecurityInformation | fscc.DACLSecurityInformation, OutputBufferLength: 4096, FileID: q.FileID})
		var qi smb2.QueryInfoResponse
		var got fscc.SecurityDescriptor
		if smb2.Status(h.Status) != smb2.StatusSuccess || qi.Decode(pdu) != nil || got.Decode(qi.Buffer) != nil {
			t.Fatalf("the child's descriptor through node 1: %v", smb2.Status(h.Status))
		}
		if got.DACL == nil || len(got.DACL.ACEs) != 2 || got.Owner == nil ||
			!got.DACL.ACEs[0].SID.Equal(*got.Owner) || got.DACL.ACEs[0].Mask != fscc.FileAllAccess || got.DACL.ACEs[0].Flags != 0 ||
			!got.DACL.ACEs[1].SID.Equal(fscc.SIDEveryone) || got.DACL.ACEs[1].Flags != 0 {
			t.Fatalf("inherited descriptor %+v %+v", got, got.DACL)
		}
		// MxAc through node 1 is what that DACL grants the owner.
		var mx smb2.MxAcResponse
		for _, ctx := range q.Contexts {
			if ctx.Name == "MxAc" {
				mx.Decode(ctx.Data)
			}
		}
		if mx.MaximalAccess&fscc.FileAllAccess != fscc.FileAllAccess {
			t.Fatalf("MxAc through node 1: %#x", mx.MaximalAccess)
		}
	})
}

func setBasic(t *testing.T, c *servertest.Conn, fid smb2.FileID, bi *fscc.BasicInformation) {
	t.Helper()
	buf := make([]byte, bi.Size())
	bi.Encode(buf)
	h, _ := c.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileBasicInformation, FileID: fid, Buffer: buf})
	if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
		t.Fatalf("SET_INFO FileBasicInformation: %v", st)
	}
}

func basicOf(t *testing.T, c *servertest.Conn, fid smb2.FileID) fscc.BasicInformation {
	t.Helper()
	h, pdu := c.Call(smb2.CmdQueryInfo, &smb2.QueryInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileBasicInformation, OutputBufferLength: 64, FileID: fid})
	var qi smb2.QueryInfoResponse
	var bi fscc.BasicInformation
	if smb2.Status(h.Status) != smb2.StatusSuccess || qi.Decode(pdu) != nil || bi.Decode(qi.Buffer) != nil {
		t.Fatalf("QUERY_INFO FileBasicInformation: %v", smb2.Status(h.Status))
	}
	return bi
}
