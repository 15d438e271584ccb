package servertest

import (
	"syscall"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// MaxFileSize caps the size of a file on the test shares. memfs allocates
// a file's whole size, so without a cap a WRITE at a large offset or a SET_INFO
// of a large end of file would exhaust the test's memory.
const MaxFileSize = 64 << 20

// capFS refuses to grow a file past MaxFileSize with EFBIG (STATUS_DISK_FULL).
type capFS struct{ vfs.FS }

func (c capFS) Open(name string, o vfs.OpenOptions) (vfs.File, bool, error) {
	f, created, err := c.FS.Open(name, o)
	if err != nil {
		return f, created, err
	}
	return capFile{f}, created, nil
}

type capFile struct{ vfs.File }

func (f capFile) WriteAt(p []byte, off int64) (int, error) {
	if off > MaxFileSize-int64(len(p)) {
		return 0, syscall.EFBIG
	}
	return f.File.WriteAt(p, off)
}

func (f capFile) Truncate(size int64) error {
	if size > MaxFileSize {
		return syscall.EFBIG
	}
	return f.File.Truncate(size)
}
