package share

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	stdutf16 "unicode/utf16"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
)

func newWatch(n *notifier, dir string, filter uint32, tree bool, max int) *watcher {
	w := &watcher{Watch: state.Watch{Dir: dir, Filter: filter}, max: max}
	if tree {
		w.TreeFilter = filter
	}
	n.add(w)
	return w
}

// decodeChanges parses FILE_NOTIFY_INFORMATION entries ([MS-FSCC] 2.7.1).
func decodeChanges(t *testing.T, b []byte) []change {
	t.Helper()
	var out []change
	for off := 0; ; {
		if off+12 > len(b) || off%4 != 0 {
			t.Fatalf("bad entry at %d of %d", off, len(b))
		}
		next := int(binary.LittleEndian.Uint32(b[off:]))
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		u := make([]uint16, n/2)
		for i := range u {
			u[i] = binary.LittleEndian.Uint16(b[off+12+2*i:])
		}
		out = append(out, change{action: binary.LittleEndian.Uint32(b[off+4:]), name: string(stdutf16.Decode(u))})
		if next == 0 {
			return out
		}
		off += next
	}
}

func TestNotifyEncode(t *testing.T) {
	in := []change{{actionAdded, "a"}, {actionRenamedOld, "sub/dir-name"}, {actionModified, "ü.txt"}}
	got := decodeChanges(t, encodeChanges(in))
	want := []change{{actionAdded, "a"}, {actionRenamedOld, `sub\dir-name`}, {actionModified, "ü.txt"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %v, want %v", i, got[i], want[i])
		}
	}
	size := 0
	for _, c := range in {
		size += c.entrySize()
	}
	if b := encodeChanges(in); (len(b)+3)&^3 != size {
		t.Errorf("entrySize sum %d, encoded %d", size, len(b))
	}
}

// TestNotifyFilterAndTree: the filter applies to the directory's own
// entries, WATCH_TREE extends it below; names are relative to the watch.
func TestNotifyFilterAndTree(t *testing.T) {
	var n notifier
	flat := newWatch(&n, "d", smb2.FileNotifyChangeFileName, false, 1000)
	tree := newWatch(&n, "d", smb2.FileNotifyChangeFileName|smb2.FileNotifyChangeDirName, true, 1000)
	root := newWatch(&n, "", smb2.FileNotifyChangeDirName, true, 1000)
	n.post(actionAdded, "d/f", smb2.FileNotifyChangeFileName)
	n.post(actionAdded, "d/sub", smb2.FileNotifyChangeDirName)
	n.post(actionAdded, "d/sub/g", smb2.FileNotifyChangeFileName)
	n.post(actionAdded, "other/h", smb2.FileNotifyChangeFileName)
	n.post(actionModified, "d/f", smb2.FileNotifyChangeAttributes)
	check := func(w *watcher, want ...change) {
		t.Helper()
		res, ch := w.wait()
		if ch != nil {
			if len(want) == 0 {
				return
			}
			t.Fatalf("%q: nothing buffered, want %v", w.Dir, want)
		}
		if len(res.changes) != len(want) {
			t.Fatalf("%q: got %v, want %v", w.Dir, res.changes, want)
		}
		for i := range want {
			if res.changes[i] != want[i] {
				t.Errorf("%q: %d: %v, want %v", w.Dir, i, res.changes[i], want[i])
			}
		}
	}
	check(flat, change{actionAdded, "f"})
	check(tree, change{actionAdded, "f"}, change{actionAdded, "sub"}, change{actionAdded, "sub/g"})
	check(root, change{actionAdded, "d/sub"})
}

// TestNotifyBufferSize: the first request's buffer size bounds what is
// kept between requests; beyond it the watch overflows and the next
// request answers STATUS_NOTIFY_ENUM_DIR (smbtorture smb2.notify.overflow,
// valid-req).
func TestNotifyBufferSize(t *testing.T) {
	var n notifier
	w := newWatch(&n, "", smb2.FileNotifyChangeFileName, false, 100)
	for _, name := range []string{"test0.txt", "test1.txt", "test2.txt", "test3.txt"} {
		n.post(actionAdded, name, smb2.FileNotifyChangeFileName)
	}
	res, ch := w.wait()
	if ch != nil || !res.overflow {
		t.Fatalf("want overflow, got %+v", res)
	}
	if _, err := notifyResponse(res, 4096); !errors.Is(err, smb2.StatusNotifyEnumDir) {
		t.Fatalf("overflow answered %v", err)
	}
	// Then the watch starts afresh.
	n.post(actionAdded, "x", smb2.FileNotifyChangeFileName)
	res, ch = w.wait()
	if ch != nil || res.overflow || len(res.changes) != 1 {
		t.Fatalf("after overflow: %+v", res)
	}
	// A change that does not fit the request's own buffer.
	if _, err := notifyResponse(res, 0); !errors.Is(err, smb2.StatusNotifyEnumDir) {
		t.Fatalf("small buffer answered %v", err)
	}
}

// TestNotifyQueue: a change completes the oldest waiting request alone;
// a cancelled request leaves the queue (smbtorture smb2.notify.double).
func TestNotifyQueue(t *testing.T) {
	var n notifier
	w := newWatch(&n, "", smb2.FileNotifyChangeDirName, false, 1000)
	_, c1 := w.wait()
	_, c2 := w.wait()
	_, c3 := w.wait()
	if !w.leave(c2) {
		t.Fatal("leave of a waiting request failed")
	}
	n.post(actionAdded, "one", smb2.FileNotifyChangeDirName)
	n.post(actionAdded, "two", smb2.FileNotifyChangeDirName)
	if r := <-c1; len(r.changes) != 1 || r.changes[0].name != "one" {
		t.Fatalf("first waiter got %+v", r)
	}
	if r := <-c3; len(r.changes) != 1 || r.changes[0].name != "two" {
		t.Fatalf("third waiter got %+v", r)
	}
	if w.leave(c1) {
		t.Fatal("leave after delivery succeeded")
	}
}

// TestNotifyRename: within a directory old and new names, across
// directories removed and added (smbtorture smb2.notify.rec); a file's
// modification comes with the close (notify_close_test.go).
func TestNotifyRename(t *testing.T) {
	var n notifier
	all := uint32(0xfff)
	w := newWatch(&n, "", all, true, 4096)
	n.postRename("a/x", "a/y", false)
	n.postRename("a/y", "z", false)
	n.postRename("a/d", "a/e", true)
	res, _ := w.wait()
	want := []change{
		{actionRenamedOld, "a/x"}, {actionRenamedNew, "a/y"},
		{actionRemoved, "a/y"}, {actionAdded, "z"},
		{actionRenamedOld, "a/d"}, {actionRenamedNew, "a/e"},
	}
	if len(res.changes) != len(want) {
		t.Fatalf("got %v", res.changes)
	}
	for i := range want {
		if res.changes[i] != want[i] {
			t.Errorf("%d: %v, want %v", i, res.changes[i], want[i])
		}
	}
}

// TestNotifyDeletePending: a delete pending on the watched directory
// completes its waits, and later requests, with STATUS_DELETE_PENDING.
func TestNotifyDeletePending(t *testing.T) {
	var n notifier
	w := newWatch(&n, "d", smb2.FileNotifyChangeFileName, false, 1000)
	other := newWatch(&n, "e", smb2.FileNotifyChangeFileName, false, 1000)
	_, ch := w.wait()
	_, och := other.wait()
	n.deletePending("d")
	if r := <-ch; !errors.Is(r.err, smb2.StatusDeletePending) {
		t.Fatalf("waiter got %+v", r)
	}
	if res, c := w.wait(); c != nil || !errors.Is(res.err, smb2.StatusDeletePending) {
		t.Fatalf("later request got %+v", res)
	}
	select {
	case r := <-och:
		t.Fatalf("other directory's waiter completed: %+v", r)
	default:
	}
}

// FuzzParseName: any client name parses without panics into a name with
// no empty, "." or ".." component, or is refused; ".." never climbs
// above the share root (smbtorture smb2.notify.tree, smb2.mkdir).
func FuzzParseName(f *testing.F) {
	for _, s := range []string{`a\b\..`, `..\..\..`, `a\..\..\x`, `zqy\..`, `f:s:$DATA`, `a\.\b`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseName(s)
		if err != nil {
			return
		}
		if p.name == "" {
			return
		}
		for _, c := range strings.Split(p.name, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("%q parsed to %q", s, p.name)
			}
		}
	})
}

func TestParseNameDotDot(t *testing.T) {
	for in, want := range map[string]string{`a\b\..`: "a", `zqy\..`: "", `a\..\b`: "b"} {
		if p, err := parseName(in); err != nil || p.name != want {
			t.Errorf("%q: %q, %v; want %q", in, p.name, err, want)
		}
	}
	for _, in := range []string{`..`, `..\..\..`, `a\..\..\x`} {
		if _, err := parseName(in); !errors.Is(err, smb2.StatusObjectPathSyntaxBad) {
			t.Errorf("%q: %v, want STATUS_OBJECT_PATH_SYNTAX_BAD", in, err)
		}
	}
}
