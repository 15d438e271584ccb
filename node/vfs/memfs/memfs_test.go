package memfs

import (
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

func TestConformance(t *testing.T) {
	vfstest.TestFS(t, func(t *testing.T) vfs.FS { return New() })
}

func TestClock(t *testing.T) {
	now := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	fsys := NewWithClock(func() time.Time { return now })
	f, _, err := fsys.Open("f", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if !fi.CreationTime.Equal(now) || !fi.LastWriteTime.Equal(now) {
		t.Errorf("times %+v, want %v", fi, now)
	}
	now = now.Add(time.Hour)
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	fi, _ = f.Stat()
	if !fi.LastWriteTime.Equal(now) || !fi.ChangeTime.Equal(now) || fi.CreationTime.Equal(now) {
		t.Errorf("after write at %v: %+v", now, fi)
	}
}
