package integration

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestBedHeldHandles: two clients on two nodes hold one file open, one
// writing, the other reading, and every READ returns what the last WRITE
// wrote — also when the WRITE leaves the size as it was, which is when a
// FUSE client's page cache keeps the old bytes. Opening and closing the
// file every round (TestBedDataCoherence) does not show it: on CephFS with
// the client's defaults those rounds read fresh while these are stale 99
// of 100 times; a FUSE mount drops a file's cached pages on open, or when
// it sees its size change, not when another client overwrites it.
func TestBedHeldHandles(t *testing.T) {
	for _, backend := range bedBackends {
		t.Run(backend, func(t *testing.T) {
			b := bedFor(t, backend, false)
			framework.WaitFor(t, clusterDeadline, "every node serving share data", func() bool {
				return allViews(t, b, "serving")
			})
			w, r := bedConnect(t, b.Nodes[0]), bedConnect(t, b.Nodes[1])
			defer w.Close()
			defer r.Close()
			const rounds = 200
			stale, done, err := heldHandleRounds(w, r, "bed-held.bin", rounds)
			if err != nil {
				t.Fatalf("round %d: %v", done, err)
			}
			t.Logf("%s: %d rounds, %d stale READs", backend, rounds, stale)
			if stale > 0 {
				t.Errorf("%d of %d READs through %s stale after a WRITE through %s on the same held file", stale, 2*rounds, b.Nodes[1].Name, b.Nodes[0].Name)
			}
		})
	}
}

// heldHandleRounds opens name through w (to write) and r (to read) once
// and then, each round, overwrites its first 64 KiB through w — the size
// stays the same except every fourth round, when it grows — and reads it
// back through r twice: 64 KiB (a READ large enough for the zero-copy
// path) and its first 1,000 bytes. It returns how many READs did not
// return what was written, and the rounds done before an error.
func heldHandleRounds(w, r *servertest.Conn, name string, rounds int) (stale, done int, err error) {
	req := servertest.CreateRequest(name)
	req.CreateDisposition = smb2.FileOverwriteIf
	wr, err := w.CreateWith(req)
	if err != nil {
		return 0, 0, fmt.Errorf("open to write: %w", err)
	}
	defer w.CloseFile(wr.FileID)
	if _, err := w.Write(wr.FileID, 0, make([]byte, 64<<10)); err != nil {
		return 0, 0, fmt.Errorf("write: %w", err)
	}
	rfid, err := r.Create(name)
	if err != nil {
		return 0, 0, fmt.Errorf("open to read: %w", err)
	}
	defer r.CloseFile(rfid)
	if _, err := r.Read(rfid, 0, 64<<10); err != nil {
		return 0, 0, fmt.Errorf("read: %w", err)
	}
	for i := range rounds {
		want := bytes.Repeat([]byte(fmt.Sprintf("%07d.", i)), 8<<10)[:64<<10]
		if _, err := w.Write(wr.FileID, 0, want); err != nil {
			return stale, i, fmt.Errorf("write: %w", err)
		}
		if i%4 == 3 {
			// Grow the file by a byte: a size change, as most rounds of
			// TestBedDataCoherence make.
			if _, err := w.Write(wr.FileID, uint64(64<<10+i/4), []byte{'+'}); err != nil {
				return stale, i, fmt.Errorf("write: %w", err)
			}
		}
		for _, n := range []int{64 << 10, 1000} {
			got, err := r.Read(rfid, 0, n)
			if err != nil {
				return stale, i, fmt.Errorf("read %d: %w", n, err)
			}
			if !bytes.Equal(got, want[:n]) {
				stale++
			}
		}
	}
	return stale, rounds, nil
}

// TestBedCephFSDefaultsRefused: CephFS with ceph-fuse's defaults keeps
// old bytes in each node's page cache; the nodes' storage check must find
// it and refuse the share, and never serve a stale byte meanwhile
// (refusedNeverStale). Its open-write-close rounds read fresh on this
// storage, so first, once every node's check has decided, a writer and a
// reader hold one file (heldHandleRounds: 99 of 100 READs stale where
// served).
func TestBedCephFSDefaultsRefused(t *testing.T) {
	b := bedFor(t, "cephfs", true)
	framework.WaitFor(t, clusterDeadline, "every node's check of share data decided", func() bool {
		decided := 0
		for _, v := range shareViews(t, b, bedShare) {
			if v.State == "serving" || v.State == "refused" {
				decided++
			}
		}
		return decided >= len(b.Nodes)
	})
	if a, ok := tryConnect(t, b.Nodes[0]); ok {
		if r, ok := tryConnect(t, b.Nodes[1]); ok {
			stale, done, err := heldHandleRounds(a, r, "bed-defaults-held.bin", 100)
			t.Logf("held handles while the share was served: %d rounds, %d stale READs (ended by: %v)", done, stale, err)
			if stale > 0 {
				t.Errorf("%d stale READs through a node serving the share on incoherent storage", stale)
			}
			r.Close()
		}
		a.Close()
	}
	refusedNeverStale(t, b)
}
