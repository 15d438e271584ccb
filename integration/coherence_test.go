package integration

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// TestCoherenceAcrossNodes checks that per-file state is one thing for the
// whole cluster: two clients on two different nodes of a three-node
// cluster, the same file.
func TestCoherenceAcrossNodes(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "gina", "--password", "Gina-Pass-1")
	checkCoherenceAcross(t, c.Nodes, "", func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "gina", "Gina-Pass-1", "data")
	})
}

// checkCoherenceAcross runs the cross-node checks of per-file state on
// the first three nodes: two clients (connect) on two different nodes,
// the same file, whose name starts with prefix.
func checkCoherenceAcross(t *testing.T, nodes []*framework.ClusterNode, prefix string, connect func(*framework.ClusterNode) *servertest.Conn) {
	// Every file name is tried from node 1 and node 2 and from node 2 and
	// node 3, so that the file's owner is sometimes one of the two nodes
	// and sometimes neither.
	pairs := [][2]*framework.ClusterNode{{nodes[0], nodes[1]}, {nodes[1], nodes[2]}, {nodes[2], nodes[0]}}
	for _, p := range pairs {
		a, b := connect(p[0]), connect(p[1])
		name := func(s string) string { return prefix + s + "-" + p[0].Name + ".txt" }

		t.Run("SharingViolation/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			req := servertest.CreateRequest(name("excl"))
			req.ShareAccess = 0
			resp, err := a.CreateWith(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Create(name("excl")); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Fatalf("open on %s of a file open without sharing on %s: %v, want STATUS_SHARING_VIOLATION", p[1].Name, p[0].Name, err)
			}
			a.CloseFile(resp.FileID)
			fid, err := b.Create(name("excl"))
			if err != nil {
				t.Fatalf("open after the other node's close: %v", err)
			}
			b.CloseFile(fid)
		})

		t.Run("DeletePending/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			fa, err := a.Create(name("del"))
			if err != nil {
				t.Fatal(err)
			}
			req := servertest.CreateRequest(name("del"))
			req.CreateOptions = smb2.FileDeleteOnClose
			fb, err := b.CreateWith(req)
			if err != nil {
				t.Fatal(err)
			}
			b.CloseFile(fb.FileID) // the delete is pending while a's open stays
			if _, err := b.Create(name("del")); !errors.Is(err, smb2.StatusDeletePending) {
				t.Fatalf("open of a file with a delete pending set through the other node: %v, want STATUS_DELETE_PENDING", err)
			}
			a.CloseFile(fa)
		})

		t.Run("BatchOplockBreak/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			req := servertest.CreateRequest(name("oplock"))
			req.RequestedOplockLevel = smb2.OplockLevelBatch
			ra, err := a.CreateWith(req)
			if err != nil {
				t.Fatal(err)
			}
			if ra.OplockLevel != smb2.OplockLevelBatch {
				t.Fatalf("oplock granted %#x, want batch", ra.OplockLevel)
			}
			// b's open waits for a's break, which arrives on a's node.
			bh := b.Header(smb2.CmdCreate)
			if _, err := b.Post(bh, servertest.Body(servertest.CreateRequest(name("oplock")))); err != nil {
				t.Fatal(err)
			}
			msg, err := a.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			var h smb2.Header
			var brk smb2.OplockBreakNotification
			if err := h.Decode(msg); err != nil || h.Command != smb2.CmdOplockBreak || brk.Decode(msg) != nil {
				t.Fatalf("expected an oplock break on %s, got command %v (%v)", p[0].Name, h.Command, err)
			}
			if brk.FileID != ra.FileID || brk.OplockLevel != smb2.OplockLevelII {
				t.Fatalf("break of %v to %#x, want %v to level II", brk.FileID, brk.OplockLevel, ra.FileID)
			}
			ah, _ := a.Call(smb2.CmdOplockBreak, &smb2.OplockBreakAck{OplockLevel: smb2.OplockLevelII, FileID: ra.FileID})
			if st := smb2.Status(ah.Status); st != smb2.StatusSuccess {
				t.Fatalf("acknowledgment: %v", st)
			}
			hs, pdus, err := b.Recv()
			if err != nil || hs[0].MessageID != bh.MessageID || smb2.Status(hs[0].Status) != smb2.StatusSuccess {
				t.Fatalf("the conflicting open after the break: %v %v", err, smb2.Status(hs[0].Status))
			}
			var rb smb2.CreateResponse
			if err := rb.Decode(pdus[0]); err != nil {
				t.Fatal(err)
			}
			a.CloseFile(ra.FileID)
			b.CloseFile(rb.FileID)
		})

		t.Run("ByteRangeLocks/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			fa, err := a.Create(name("lock"))
			if err != nil {
				t.Fatal(err)
			}
			fb, err := b.Create(name("lock"))
			if err != nil {
				t.Fatal(err)
			}
			lock := func(s *servertest.Conn, fid smb2.FileID, flags uint32) smb2.Status {
				h, _ := s.Call(smb2.CmdLock, &smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{Offset: 0, Length: 100, Flags: flags}}})
				return smb2.Status(h.Status)
			}
			if st := lock(a, fa, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately); st != smb2.StatusSuccess {
				t.Fatalf("first lock: %v", st)
			}
			if st := lock(b, fb, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately); st != smb2.StatusLockNotGranted {
				t.Fatalf("the same range locked through the other node: %v, want STATUS_LOCK_NOT_GRANTED", st)
			}
			if _, err := b.Write(fb, 10, []byte("x")); !errors.Is(err, smb2.StatusFileLockConflict) {
				t.Fatalf("write into the range through the other node: %v, want STATUS_FILE_LOCK_CONFLICT", err)
			}
			if st := lock(a, fa, smb2.LockFlagUnlock); st != smb2.StatusSuccess {
				t.Fatalf("unlock: %v", st)
			}
			if _, err := b.Write(fb, 10, []byte("x")); err != nil {
				t.Fatalf("write after the unlock: %v", err)
			}
			a.CloseFile(fa)
			b.CloseFile(fb)
		})

		t.Run("RenameNeedsSharedDelete/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			fb, err := b.Create(name("ren"))
			if err != nil {
				t.Fatal(err)
			}
			// a keeps the file open for its attributes, not sharing delete.
			stat := servertest.CreateRequest(name("ren"))
			stat.DesiredAccess, stat.ShareAccess = 0x80, smb2.FileShareRead|smb2.FileShareWrite
			ra, err := a.CreateWith(stat)
			if err != nil {
				t.Fatal(err)
			}
			rename := func() smb2.Status {
				ren := &fscc.RenameInformation{FileName: name("renamed")}
				h, _ := b.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile,
					FileInfoClass: fscc.FileRenameInformation, Buffer: servertest.Body(ren), FileID: fb})
				return smb2.Status(h.Status)
			}
			if st := rename(); st != smb2.StatusSharingViolation {
				t.Fatalf("rename through %s of a file open through %s without FILE_SHARE_DELETE: %v, want STATUS_SHARING_VIOLATION", p[1].Name, p[0].Name, st)
			}
			a.CloseFile(ra.FileID)
			if st := rename(); st != smb2.StatusSuccess {
				t.Fatalf("rename after the other open closed: %v", st)
			}
			b.CloseFile(fb)
		})

		t.Run("DirectoryLeaseBroken/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			dir := servertest.CreateRequest(name("dir"))
			dir.CreateOptions, dir.DesiredAccess, dir.CreateDisposition = smb2.FileDirectoryFile, smb2.GenericRead, smb2.FileOpenIf
			dir.RequestedOplockLevel = smb2.OplockLevelLease
			lr := smb2.LeaseRequest{Key: [16]byte{7}, State: smb2.LeaseRead | smb2.LeaseHandle, Version: 2, Epoch: 1}
			dir.Contexts = []smb2.CreateContext{{Name: "RqLs", Data: lr.Append(nil)}}
			ra, err := a.CreateWith(dir)
			if err != nil {
				t.Fatal(err)
			}
			if ra.OplockLevel != smb2.OplockLevelLease {
				t.Fatalf("no lease on the directory (oplock level %#x)", ra.OplockLevel)
			}
			fb, err := b.Create(name("dir") + `\entry.txt`) // a new entry, through the other node
			if err != nil {
				t.Fatal(err)
			}
			b.CloseFile(fb)
			msg, err := a.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			var h smb2.Header
			var brk smb2.LeaseBreakNotification
			if err := h.Decode(msg); err != nil || h.Command != smb2.CmdOplockBreak || brk.Decode(msg) != nil {
				t.Fatalf("expected the directory's lease break on %s, got command %v", p[0].Name, h.Command)
			}
			if brk.LeaseKey != lr.Key || brk.NewLeaseState != 0 {
				t.Fatalf("break %+v, want lease 7 to none", brk)
			}
			ah, _ := a.Call(smb2.CmdOplockBreak, &smb2.LeaseBreakAck{LeaseKey: brk.LeaseKey})
			if st := smb2.Status(ah.Status); st != smb2.StatusSuccess {
				t.Fatalf("acknowledgment: %v", st)
			}
			a.CloseFile(ra.FileID)
		})

		t.Run("BlockingLockGrantedWhenHolderDrops/"+p[0].Name+"-"+p[1].Name, func(t *testing.T) {
			holder := connect(p[0])
			fh, err := holder.Create(name("block"))
			if err != nil {
				t.Fatal(err)
			}
			fb, err := b.Create(name("block"))
			if err != nil {
				t.Fatal(err)
			}
			h, _ := holder.Call(smb2.CmdLock, &smb2.LockRequest{FileID: fh, Locks: []smb2.LockElement{{Offset: 0, Length: 100, Flags: smb2.LockFlagExclusive}}})
			if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
				t.Fatalf("lock: %v", st)
			}
			if _, err := b.Read(fb, 0, 10); !errors.Is(err, smb2.StatusFileLockConflict) {
				t.Fatalf("read of the locked range through the other node: %v, want STATUS_FILE_LOCK_CONFLICT", err)
			}
			lh := b.Header(smb2.CmdLock)
			if _, err := b.Post(lh, servertest.Body(&smb2.LockRequest{FileID: fb, Locks: []smb2.LockElement{{Offset: 50, Length: 1, Flags: smb2.LockFlagExclusive}}})); err != nil {
				t.Fatal(err)
			}
			awaitInterim(t, b, lh.MessageID) // waits at the owner
			holder.Close()                   // its connection drops: its open and lock go
			hs, _, err := b.Recv()
			if err != nil || hs[0].MessageID != lh.MessageID || smb2.Status(hs[0].Status) != smb2.StatusSuccess {
				t.Fatalf("blocking lock after the holder's connection dropped: %v %v", err, smb2.Status(hs[0].Status))
			}
			b.CloseFile(fb)
		})
	}
}

// TestNotifyAcrossNodes: a CHANGE_NOTIFY pending on one node is completed
// by a change made through another (smbtorture smb2.notify.dir hung on
// this when connections were spread over nodes).
func TestNotifyAcrossNodes(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 2})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "hana", "--password", "Hana-Pass-1")
	connect := func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "hana", "Hana-Pass-1", "data")
	}
	watcher, changer := connect(c.Nodes[1]), connect(c.Nodes[0])
	dir := servertest.CreateRequest("watched")
	dir.DesiredAccess = 0x001f01ff
	dir.CreateOptions = smb2.FileDirectoryFile
	dir.CreateDisposition = smb2.FileCreate
	resp, err := watcher.CreateWith(dir)
	if err != nil {
		t.Fatal(err)
	}
	for round, name := range []string{`watched\a.txt`, `watched\b.txt`} {
		nh := watcher.Header(smb2.CmdChangeNotify)
		if _, err := watcher.Post(nh, servertest.Body(&smb2.ChangeNotifyRequest{
			OutputBufferLength: 4096, FileID: resp.FileID, CompletionFilter: smb2.FileNotifyChangeFileName,
		})); err != nil {
			t.Fatal(err)
		}
		// The interim response says the watch is pending, and so known to
		// every node.
		awaitInterim(t, watcher, nh.MessageID)
		fid, err := changer.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		changer.CloseFile(fid)
		hs, pdus, err := watcher.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if hs[0].MessageID != nh.MessageID || smb2.Status(hs[0].Status) != smb2.StatusSuccess {
			t.Fatalf("round %d: notify answered %v (message %d)", round, smb2.Status(hs[0].Status), hs[0].MessageID)
		}
		var nr smb2.ChangeNotifyResponse
		if err := nr.Decode(pdus[0]); err != nil || len(nr.Buffer) == 0 {
			t.Fatalf("round %d: notify response %v, %d bytes of changes", round, err, len(nr.Buffer))
		}
	}
}

// awaitInterim reads frames until the interim (STATUS_PENDING) response
// to message id.
func awaitInterim(t *testing.T, c *servertest.Conn, id uint64) {
	t.Helper()
	for {
		msg, err := c.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		var h smb2.Header
		if err := h.Decode(msg); err != nil {
			t.Fatal(err)
		}
		if h.MessageID == id && h.IsAsync() && smb2.Status(h.Status) == smb2.StatusPending {
			return
		}
		t.Fatalf("message %d answered %v before going pending", h.MessageID, smb2.Status(h.Status))
	}
}
