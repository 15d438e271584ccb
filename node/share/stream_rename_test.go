package share

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs/osfs"
)

// osfsDisk is a Disk over a fresh osfs root; the test is skipped where
// the filesystem keeps no user xattrs (no streams).
func osfsDisk(t *testing.T) *Disk {
	t.Helper()
	root := filepath.Join(t.TempDir(), "share")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := osfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	if !fsys.XattrsSupported() {
		t.Skip("no user xattrs here")
	}
	return NewDisk("data", fsys, false, nil)
}

// Stream renames ([MS-FSA] 2.1.5.15.12.1, smbtorture smb2.streams.rename
// and rename2) on both backends.
func TestStreamRename(t *testing.T) {
	for _, tc := range []struct {
		name string
		disk func(t *testing.T) *Disk
	}{
		{"memfs", func(t *testing.T) *Disk { return infoDisk(t) }},
		{"osfs", osfsDisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.disk(t)
			testStreamRenameTargets(t, d)
			testStreamRenameToData(t, d)
			testStreamRenameRefused(t, d)
		})
	}
}

// renameTo renames o through SET_INFO FileRenameInformation.
func renameTo(o *open, to string, replace bool) error {
	return setFileInfo(o, fscc.FileRenameInformation, &fscc.RenameInformation{FileName: to, ReplaceIfExists: replace})
}

// streamWith creates name (a stream) holding data, and closes it.
func streamWith(t *testing.T, d *Disk, name, data string) {
	t.Helper()
	o := infoOpen(t, d, name, false, 0)
	if data != "" {
		if _, err := writeOpen(o, &smb2.WriteRequest{Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	o.Close(false)
}

// wantStreams checks the FILE_STREAM_INFORMATION of o's file.
func wantStreams(t *testing.T, o *open, want ...string) {
	t.Helper()
	b, err := queryFile(t, o, fscc.FileStreamInformation, 4096)
	wantStatus(t, err, 0)
	var l fscc.StreamInformation
	if err := l.Decode(b); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range l {
		got[e.Name] = true
	}
	if len(got) != len(want) {
		t.Fatalf("streams %+v, want %q", l, want)
	}
	for _, w := range want {
		if !got[w] {
			t.Fatalf("streams %+v, want %q", l, want)
		}
	}
}

// wantData checks what o reads from offset 0.
func wantData(t *testing.T, o *open, want string) {
	t.Helper()
	buf := make([]byte, len(want)+8)
	n, _ := o.f.ReadAt(buf, 0)
	if string(buf[:n]) != want {
		t.Fatalf("read %q, want %q", buf[:n], want)
	}
}

// testStreamRenameTargets renames a named stream to new and existing
// names: an existing target is replaced only when asked, unopened and
// empty; the open and the other opens of the stream follow it.
func testStreamRenameTargets(t *testing.T, d *Disk) {
	infoOpen(t, d, "f", false, 0).Close(false)
	streamWith(t, d, "f:s2", "")
	streamWith(t, d, "f:full", "x")
	o := infoOpen(t, d, "f:s1", false, 0)
	if _, err := writeOpen(o, &smb2.WriteRequest{Data: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	other := infoOpen(t, d, "f:S1", false, 0)

	wantStatus(t, renameTo(o, ":s2", false), smb2.StatusObjectNameCollision)
	wantStatus(t, renameTo(o, ":full:$DATA", true), smb2.StatusInvalidParameter) // not empty
	s2 := infoOpen(t, d, "f:s2", false, smb2.FileReadAttributes)
	wantStatus(t, renameTo(o, ":S2", true), smb2.StatusInvalidParameter) // open
	s2.Close(false)
	wantStatus(t, renameTo(o, ":S2:$DaTa", true), 0)
	if o.currentStream() != "s2" || other.currentStream() != "s2" {
		t.Fatalf("streams after rename %q, %q", o.currentStream(), other.currentStream())
	}
	wantStreams(t, o, "::$DATA", ":s2:$DATA", ":full:$DATA")
	wantData(t, other, "one")
	if _, err := queryFile(t, o, fscc.FileAllInformation, 4096); err != nil {
		t.Fatalf("ALL_INFORMATION after rename: %v", err)
	}
	// The same name in another case changes nothing.
	wantStatus(t, renameTo(o, ":S2", false), 0)
	if o.currentStream() != "s2" {
		t.Fatalf("stream %q after a rename onto itself", o.currentStream())
	}
	wantStatus(t, renameTo(o, ":new", false), 0)
	wantStreams(t, o, "::$DATA", ":new:$DATA", ":full:$DATA")
	other.Close(false)
	o.Close(false)
	wantData(t, infoOpen(t, d, "f:new", false, 0), "one")
}

// testStreamRenameToData renames a named stream onto the file's unnamed
// data stream, which must be replaced, unopened and empty.
func testStreamRenameToData(t *testing.T, d *Disk) {
	infoOpen(t, d, "g", false, 0).Close(false)
	o := infoOpen(t, d, "g:s", false, 0)
	if _, err := writeOpen(o, &smb2.WriteRequest{Data: []byte("data")}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, renameTo(o, "::$DATA", false), smb2.StatusObjectNameCollision)
	base := infoOpen(t, d, "g", false, smb2.FileReadAttributes)
	wantStatus(t, renameTo(o, "::$DATA", true), smb2.StatusInvalidParameter) // open
	base.Close(false)
	wantStatus(t, renameTo(o, "::$DATA", true), 0)
	if o.currentStream() != "" {
		t.Fatalf("stream %q after renaming onto the data", o.currentStream())
	}
	wantStreams(t, o, "::$DATA")
	if _, err := writeOpen(o, &smb2.WriteRequest{Data: []byte("!"), Offset: 4}); err != nil {
		t.Fatal(err)
	}
	o.Close(false)
	g := infoOpen(t, d, "g", false, 0)
	wantData(t, g, "data!")
	g.Close(false)

	streamWith(t, d, "g:t", "")
	wantStatus(t, renameTo(infoOpen(t, d, "g:t", false, 0), "::$DATA", true), smb2.StatusInvalidParameter) // g holds data
}

// testStreamRenameRefused covers the targets and opens a stream rename
// refuses.
func testStreamRenameRefused(t *testing.T, d *Disk) {
	o := infoOpen(t, d, "h:s", false, 0)
	for target, want := range map[string]smb2.Status{
		":":         smb2.StatusInvalidParameter,
		"::":        smb2.StatusInvalidParameter,
		":a:":       smb2.StatusInvalidParameter,
		":a/b":      smb2.StatusInvalidParameter,
		":a:$DATA:": smb2.StatusInvalidParameter,
		":a:$FOO":   smb2.StatusObjectTypeMismatch,
		`h:t`:       smb2.StatusObjectNameInvalid, // a path names no stream
		"t":         smb2.StatusInvalidParameter,  // a stream is renamed to a stream only
	} {
		wantStatus(t, renameTo(o, target, true), want)
	}
	// The rename opens the target's directory first: an open of it that
	// does not share delete refuses the rename.
	infoOpen(t, d, "dir", true, 0)
	ds := infoOpen(t, d, `dir\i:s`, false, 0)
	wantStatus(t, renameTo(ds, `dir\i:t`, true), smb2.StatusSharingViolation)
	wantStatus(t, renameTo(ds, ":t", true), 0)
	// A directory has no unnamed data stream, and its index is not renamed.
	dirStream := infoOpen(t, d, "dir:x", false, 0)
	wantStatus(t, renameTo(dirStream, "::$DATA", true), smb2.StatusInvalidParameter)
	wantStatus(t, renameTo(infoOpen(t, d, "dir", true, 0), ":y", true), smb2.StatusInvalidParameter)
	// The unnamed data stream of a file is not renamed here.
	wantStatus(t, renameTo(infoOpen(t, d, "h", false, 0), ":y", true), smb2.StatusNotSupported)
}

// FuzzParseStreamTarget: any target parses to a stream name without
// separators, or to an error.
func FuzzParseStreamTarget(f *testing.F) {
	for _, s := range []string{":", "::$DATA", ":a", ":a:$DATA", ":a:", ":a:$X", ":\x00", ":a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" || target[0] != ':' {
			return // rename hands over only targets starting with ':'
		}
		name, err := parseStreamTarget(target)
		if err == nil && strings.ContainsAny(name, ":\\/\x00") {
			t.Fatalf("%q parsed to %q", target, name)
		}
	})
}
