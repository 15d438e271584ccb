package share

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// closeTestRmdir removes a directory as smbtorture's smb2_util_rmdir does: an open
// for DELETE with FILE_DELETE_ON_CLOSE, then its close.
func closeTestRmdir(t *testing.T, d *Disk, name string) error {
	t.Helper()
	h, _, err := d.Create(&server.Request{}, &smb2.CreateRequest{
		ImpersonationLevel: 2, DesiredAccess: smb2.Delete, ShareAccess: 7,
		CreateDisposition: smb2.FileOpen, CreateOptions: smb2.FileDirectoryFile | smb2.FileDeleteOnClose,
		Name: name,
	})
	if err != nil {
		return err
	}
	_, err = h.(*open).Close(false)
	return err
}

func closeTestRename(t *testing.T, o *open, to string) {
	t.Helper()
	wantStatus(t, setFileInfo(o, fscc.FileRenameInformation, &fscc.RenameInformation{FileName: to, ReplaceIfExists: true}), 0)
}

func bufferedChanges(w *watcher) []change {
	res, ch := w.wait()
	if ch != nil {
		w.leave(ch)
		return nil
	}
	return res.changes
}

func wantChanges(t *testing.T, got []change, want ...change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func onDisk(d *Disk, name string) bool {
	_, err := d.fs.Stat(name)
	return err == nil
}

// TestDeleteOnCloseNonEmptyDirectory follows smbtorture
// smb2.notify.mask-change: a directory whose subdirectory has a delete
// pending, kept by another open, is removed with FILE_DELETE_ON_CLOSE.
// The CREATE and the CLOSE succeed and the directory stays, since the
// close marks a directory deleted only if it is empty then ([MS-FSA]
// 2.1.5.5, Phase 1); the subdirectory goes with its last open. A renamed
// file's attribute change is reported when the renaming open closes.
func TestDeleteOnCloseNonEmptyDirectory(t *testing.T) {
	d := infoDisk(t)
	watched := infoOpen(t, d, `w`, true, smb2.FileListDirectory) // no DELETE: renames in it go on
	w := watched.watcherFor(&smb2.ChangeNotifyRequest{
		CompletionFilter: smb2.FileNotifyChangeAttributes, Flags: smb2.WatchTree, OutputBufferLength: 1000,
	})
	sub := infoOpen(t, d, `w\sub`, true, 0)
	sub.Close(false)
	s1 := infoOpen(t, d, `w\sub\s1`, true, 0)
	closeTestRename(t, s1, `w\sub\s1-r`)
	f := infoOpen(t, d, `w\sub\f`, false, 0)
	closeTestRename(t, f, `w\f-r`)
	wantChanges(t, bufferedChanges(w)) // not before the close
	f.Close(false)
	wantChanges(t, bufferedChanges(w), change{actionModified, "f-r"})

	wantStatus(t, closeTestRmdir(t, d, `w\sub\s1-r`), 0)
	if !onDisk(d, "w/sub/s1-r") {
		t.Fatal("delete-pending directory removed while still open")
	}
	wantStatus(t, closeTestRmdir(t, d, `w\sub`), 0)
	if !onDisk(d, "w/sub") {
		t.Fatal("directory with an entry removed")
	}
	if d.table.DeletePending(sub.so.Key) {
		t.Fatal("a close that did not delete left a delete pending")
	}
	s1.Close(false)
	if onDisk(d, "w/sub/s1-r") {
		t.Fatal("last close of a delete-pending directory left it")
	}
	wantStatus(t, closeTestRmdir(t, d, `w\sub`), 0)
	if onDisk(d, "w/sub") {
		t.Fatal("empty directory not removed")
	}
}

// TestDeleteOnCloseEmptiedDirectory: FILE_DELETE_ON_CLOSE on a directory
// is judged when the open closes: one emptied meanwhile is deleted.
func TestDeleteOnCloseEmptiedDirectory(t *testing.T) {
	d := infoDisk(t)
	infoOpen(t, d, `dir`, true, 0).Close(false)
	f := infoOpen(t, d, `dir\f`, false, 0)
	f.Close(false)
	h, _, err := d.Create(&server.Request{}, &smb2.CreateRequest{
		ImpersonationLevel: 2, DesiredAccess: smb2.Delete, ShareAccess: 7,
		CreateDisposition: smb2.FileOpen, CreateOptions: smb2.FileDirectoryFile | smb2.FileDeleteOnClose,
		Name: "dir",
	})
	wantStatus(t, err, 0)
	if err := d.fs.Remove("dir/f"); err != nil {
		t.Fatal(err)
	}
	h.(*open).Close(false)
	if onDisk(d, "dir") {
		t.Fatal("directory emptied before the close was not deleted")
	}
}

// TestRenameNotifyOnClose follows smbtorture smb2.notify.rec: while the
// renaming opens stay open, a watch for names, attributes and creation
// sees the names only.
func TestRenameNotifyOnClose(t *testing.T) {
	d := infoDisk(t)
	watched := infoOpen(t, d, `w`, true, smb2.FileListDirectory) // no DELETE: renames in it go on
	w := watched.watcherFor(&smb2.ChangeNotifyRequest{
		CompletionFilter: smb2.FileNotifyChangeFileName | smb2.FileNotifyChangeDirName |
			smb2.FileNotifyChangeAttributes | smb2.FileNotifyChangeCreation,
		Flags: smb2.WatchTree, OutputBufferLength: 1000,
	})
	f := infoOpen(t, d, `w\a`, false, 0)
	closeTestRename(t, f, `w\b`)
	g := infoOpen(t, d, `w\b`, false, 0)
	closeTestRename(t, g, `w\c`)
	wantChanges(t, bufferedChanges(w),
		change{actionAdded, "a"}, change{actionRenamedOld, "a"}, change{actionRenamedNew, "b"},
		change{actionRenamedOld, "b"}, change{actionRenamedNew, "c"})
	// Under the name the file has when the open closes, though f renamed
	// it to b.
	f.Close(false)
	wantChanges(t, bufferedChanges(w), change{actionModified, "c"})
	g.Close(false)
	wantChanges(t, bufferedChanges(w), change{actionModified, "c"})

	// A renamed file deleted by the close is reported removed only.
	h := infoOpen(t, d, `w\c`, false, 0)
	closeTestRename(t, h, `w\e`)
	wantStatus(t, h.setDisposition(true), 0)
	h.Close(false)
	wantChanges(t, bufferedChanges(w),
		change{actionRenamedOld, "c"}, change{actionRenamedNew, "e"}, change{actionRemoved, "e"})
}

// TestNotifyAfterDeletePending follows smbtorture smb2.notify.rmdir3 when
// the other connection wins the race: the directory's delete is set pending
// (another open's FILE_DELETE_ON_CLOSE, closed) before the first
// CHANGE_NOTIFY on a handle still open reaches the server; the request
// completes at once with STATUS_DELETE_PENDING instead of waiting forever.
func TestNotifyAfterDeletePending(t *testing.T) {
	d := infoDisk(t)
	watched := infoOpen(t, d, `gone`, true, smb2.FileListDirectory)
	wantStatus(t, closeTestRmdir(t, d, `gone`), 0)
	w := watched.watcherFor(&smb2.ChangeNotifyRequest{CompletionFilter: smb2.FileNotifyChangeFileName, OutputBufferLength: 1000})
	res, ch := w.wait()
	if ch != nil {
		w.leave(ch)
		t.Fatal("CHANGE_NOTIFY on a delete-pending directory waits")
	}
	wantStatus(t, res.err, smb2.StatusDeletePending)
	watched.Close(false)
	if onDisk(d, "gone") {
		t.Fatal("delete-pending directory left after its last close")
	}
}
