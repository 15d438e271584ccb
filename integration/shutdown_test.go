package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	smb2 "github.com/cloudsoda/go-smb2"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestSIGTERMDuringLargeWrite: a cluster node gets SIGTERM while a client
// writes a large file in 1 MiB chunks from several goroutines. The node
// leaves the interface list, answers the WRITEs it had read, and exits 0
// within its shutdown timeout. On disk afterwards, every chunk the client
// saw acknowledged holds its bytes, and every chunk the server wrote whole
// was acknowledged: the server did no work it did not answer.
func TestSIGTERMDuringLargeWrite(t *testing.T) {
	const (
		chunk    = 1 << 20
		chunks   = 128
		writers  = 4
		sigAfter = 8 // acknowledged chunks before the SIGTERM
	)
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 1})
	n := c.Nodes[0]
	dir := t.TempDir()
	c.MustSMBCtl(t, "share", "add", "data", dir)
	c.MustSMBCtl(t, "user", "add", "nora", "--password", "Nora-Pass-1")

	var s *smb2.Session
	framework.WaitFor(t, clusterDeadline, "nora logs in", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d := &smb2.Dialer{Initiator: &smb2.NTLMInitiator{User: "nora", Password: "Nora-Pass-1"}}
		var err error
		s, err = d.Dial(ctx, n.Addr)
		return err == nil
	})
	var fs *smb2.Share
	framework.WaitFor(t, clusterDeadline, "share data", func() bool {
		var err error
		fs, err = s.Mount(`\\` + n.Host + `\data`)
		return err == nil
	})
	f, err := fs.Create("big.bin")
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu     sync.Mutex
		acked  [chunks]bool
		nAcked int
		errs   []error
	)
	term := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < chunks; i += writers {
				if _, err := f.WriteAt(chunkData(i, chunk), int64(i)*chunk); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				acked[i] = true
				nAcked++
				if nAcked == sigAfter {
					close(term)
				}
				mu.Unlock()
			}
		}()
	}
	<-term
	if err := n.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-n.Exited()
	if err := n.ExitErr(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	wg.Wait()

	log := n.Log()
	for _, want := range []string{"left the interface list", "shut down"} {
		if !strings.Contains(log, want) {
			t.Errorf("the node's log lacks %q", want)
		}
	}
	if strings.Contains(log, "shutdown timed out") {
		t.Error("the shutdown ran into its timeout")
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "msg=\"shut down\"") {
			t.Log(l)
		}
	}
	if nAcked == chunks {
		t.Fatal("every chunk was acknowledged: the SIGTERM came too late to test anything")
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), "reset") {
			t.Errorf("a writer saw the connection reset: %v", err)
		}
	}
	disk, err := os.ReadFile(filepath.Join(dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for i := range chunks {
		var got []byte
		if end := (i + 1) * chunk; end <= len(disk) {
			got = disk[i*chunk : end]
		}
		onDisk := bytes.Equal(got, chunkData(i, chunk))
		switch {
		case acked[i] && !onDisk:
			t.Errorf("chunk %d was acknowledged but is not in the file", i)
		case onDisk && !acked[i]:
			t.Errorf("chunk %d was written whole but never acknowledged", i)
		}
		if onDisk {
			whole++
		}
	}
	t.Logf("%d of %d chunks acknowledged and on disk; the writers stopped with %v", whole, chunks, errors.Join(errs...))
}

// chunkData is chunk i of the file: distinct in every 8 bytes.
func chunkData(i, size int) []byte {
	b := make([]byte, size)
	for off := 0; off < size; off += 8 {
		binary.LittleEndian.PutUint64(b[off:], uint64(i)<<32|uint64(off))
	}
	return b
}
