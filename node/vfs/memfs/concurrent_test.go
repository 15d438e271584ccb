package memfs

import (
	"fmt"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// TestConcurrent exercises the lock under the race detector.
func TestConcurrent(t *testing.T) {
	fsys := New()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("f%d", i)
			f, _, err := fsys.Open(name, vfs.OpenOptions{Read: true, Write: true, Create: vfs.CreateIfAbsent})
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for j := range 100 {
				if _, err := f.WriteAt([]byte{byte(j)}, int64(j)); err != nil {
					t.Error(err)
				}
				_, _ = fsys.Stat(name)
				_ = fsys.Rename(name, name+"x", true)
				_ = fsys.Rename(name+"x", name, true)
			}
		})
	}
	wg.Wait()
}
