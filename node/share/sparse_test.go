package share

import (
	"bytes"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/memfs"
	"github.com/smbcluster/smbcluster/node/vfs/osfs"
)

// sparseBackends are the backends the sparse round trips run over.
func sparseBackends(t *testing.T) map[string]*Disk {
	os, err := osfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Disk{
		"memfs": NewDisk("data", memfs.New(), false, nil),
		"osfs":  NewDisk("data", os, false, nil),
	}
}

func isSparse(t *testing.T, o *open) bool {
	t.Helper()
	fi, err := o.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Attributes&vfs.AttrSparse != 0
}

// queryRanges runs FSCTL_QUERY_ALLOCATED_RANGES over [off, off+n).
func queryRanges(t *testing.T, o *open, off, n int64, max uint32) ([]fscc.FileAllocatedRangeBuffer, error) {
	t.Helper()
	r, err := ioctl(o, nil, smb2.FsctlQueryAllocatedRanges, encode(&fscc.FileAllocatedRangeBuffer{FileOffset: off, Length: n}), max)
	if r == nil {
		return nil, err
	}
	rs, derr := fscc.DecodeAllocatedRanges(r.Output)
	if derr != nil {
		t.Fatal(derr)
	}
	return rs, err
}

// TestSparseRoundTrip sets and clears the sparse attribute, punches a
// hole and reads the allocated ranges back, over memfs and osfs.
func TestSparseRoundTrip(t *testing.T) {
	for name, d := range sparseBackends(t) {
		t.Run(name, func(t *testing.T) {
			o := infoOpen(t, d, "f", false, 0)
			if isSparse(t, o) {
				t.Fatal("new file is sparse")
			}
			wantStatus(t, ioctlErr(ioctl(o, nil, smb2.FsctlSetSparse, nil, 0)), 0) // no buffer: set
			if !isSparse(t, o) {
				t.Fatal("not sparse after FSCTL_SET_SPARSE")
			}
			data := bytes.Repeat([]byte{0xAB}, 256<<10)
			o.f.WriteAt(data, 0)
			wantStatus(t, ioctlErr(ioctl(o, nil, smb2.FsctlSetZeroData, encode(&fscc.FileZeroDataInformation{FileOffset: 64 << 10, BeyondFinalZero: 128 << 10}), 0)), 0)
			got := make([]byte, len(data))
			o.f.ReadAt(got, 0)
			if got[64<<10-1] != 0xAB || !bytes.Equal(got[64<<10:128<<10], make([]byte, 64<<10)) || got[128<<10] != 0xAB {
				t.Fatal("FSCTL_SET_ZERO_DATA range wrong")
			}
			rs, err := queryRanges(t, o, 0, 1<<20, 1024)
			wantStatus(t, err, 0)
			if len(rs) == 0 || rs[0].FileOffset != 0 || rs[len(rs)-1].FileOffset+rs[len(rs)-1].Length != 256<<10 {
				t.Fatalf("ranges %+v", rs)
			}
			if len(rs) == 2 { // the backend punched a hole: one range on each side
				if _, err := queryRanges(t, o, 0, 1<<20, 16); err != smb2.StatusBufferOverflow {
					t.Fatalf("one range of two: %v", err)
				}
			}
			wantStatus(t, ioctlErr(ioctl(o, nil, smb2.FsctlSetSparse, []byte{0}, 0)), 0)
			if isSparse(t, o) {
				t.Fatal("sparse after clearing")
			}
			rs, err = queryRanges(t, o, 1000, 1<<20, 1024)
			wantStatus(t, err, 0)
			if len(rs) != 1 || rs[0] != (fscc.FileAllocatedRangeBuffer{FileOffset: 1000, Length: 256<<10 - 1000}) {
				t.Fatalf("ranges of a file not sparse %+v", rs)
			}
		})
	}
}

// TestSparseAttributeRules: only FSCTL_SET_SPARSE sets the attribute
// (not CREATE nor SET_INFO), directories refuse it, and
// FSCTL_SET_ZERO_DATA respects byte-range locks of other opens.
func TestSparseAttributeRules(t *testing.T) {
	d := infoDisk(t)
	req := &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.MaximumAllowed, ShareAccess: 7,
		CreateDisposition: smb2.FileCreate, Name: "s", FileAttributes: vfs.AttrSparse | vfs.AttrArchive}
	h, _, err := d.Create(&server.Request{}, req)
	if err != nil {
		t.Fatal(err)
	}
	o := h.(*open)
	if isSparse(t, o) {
		t.Fatal("CREATE made the file sparse")
	}
	ioctl(o, nil, smb2.FsctlSetSparse, []byte{1, 2, 3}, 0) // longer buffers are taken
	if !isSparse(t, o) {
		t.Fatal("not sparse")
	}
	bi := &fscc.BasicInformation{FileAttributes: fscc.FileAttributeHidden}
	wantStatus(t, setFileInfo(o, fscc.FileBasicInformation, bi), 0)
	if !isSparse(t, o) {
		t.Fatal("SET_INFO cleared the sparse attribute")
	}
	dir := infoOpen(t, d, "d", true, 0)
	wantStatus(t, ioctlErr(ioctl(dir, nil, smb2.FsctlSetSparse, nil, 0)), smb2.StatusInvalidParameter)
	ro := infoOpen(t, d, "s", false, smb2.FileReadData)
	wantStatus(t, ioctlErr(ioctl(ro, nil, smb2.FsctlSetSparse, nil, 0)), smb2.StatusAccessDenied)
}
