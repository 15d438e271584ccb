package integration

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestBedCoherence: per-file state is one thing for the cluster when every
// node is its own host with its own mount: share modes, locks and the
// writes they block, oplock and lease breaks, delete pending, rename
// against an open — two clients on two nodes, the same file.
func TestBedCoherence(t *testing.T) {
	for _, backend := range bedBackends {
		t.Run(backend, func(t *testing.T) {
			b := bedFor(t, backend, false)
			for _, n := range b.Nodes {
				bedConnect(t, n).Close()
			}
			t.Run("ServedByEveryNode", func(t *testing.T) {
				framework.WaitFor(t, clusterDeadline, "every node serving share data", func() bool {
					return allViews(t, b, "serving")
				})
			})
			// The bed outlives the test (-count, the other tests): names
			// of this run's own.
			prefix := fmt.Sprintf("bedcoh-%d-", time.Now().UnixNano())
			checkCoherenceAcross(t, b.Nodes, prefix, func(n *framework.ClusterNode) *servertest.Conn {
				return bedConnect(t, n)
			})
		})
	}
}

// TestBedDataCoherence: a file written through one node is read through
// another at once, bytes and size: 1,000 rounds, each a fresh open for the
// write (overwriting, the size changing) and a fresh open for the read,
// alternately small (the READ answered inline) and large (64 KiB and more:
// sendfile when the node's page cache holds the data), not one stale. The
// rounds run on five pairs of nodes at once (1→2, 2→3, 3→1, 1→3, each
// pair its own files and connections, to bound the time on slow storage),
// the fifth reading through a channel bound on node 1 of a session made
// on node 3: the open is node 3's, the READs are node 1's, which answers
// them through its own mount (its sendfile for the large ones).
func TestBedDataCoherence(t *testing.T) {
	for _, backend := range bedBackends {
		t.Run(backend, func(t *testing.T) {
			b := bedFor(t, backend, false)
			const rounds, workers = 1000, 5
			start := time.Now()
			var stale atomic.Int64
			var wg sync.WaitGroup
			for k := range workers {
				wn, rn := b.Nodes[k%3], b.Nodes[(k+1+k/3)%3]
				w, r := bedConnect(t, wn), bedConnect(t, rn)
				via, vn := r, rn
				if k == 4 {
					vn = b.Nodes[0]
					via = bedChannel(t, r, vn)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer w.Close()
					defer r.Close()
					for i := k; i < rounds; i += workers {
						got, want, err := writeReadRound(w, r, via, fmt.Sprintf("bed-data-%d-%d.bin", k, i%3), i)
						if err != nil {
							t.Errorf("round %d (%s to %s, read on %s): %v", i, wn.Name, rn.Name, vn.Name, err)
							return
						}
						if !bytes.Equal(got, want) {
							if stale.Add(1) <= 5 {
								t.Errorf("round %d: read %d bytes through %s, want the %d %s wrote", i, len(got), vn.Name, len(want), wn.Name)
							}
						}
					}
				}()
			}
			wg.Wait()
			t.Logf("%s: %d rounds in %v, %d stale", backend, rounds, time.Since(start).Round(time.Millisecond), stale.Load())
			if stale.Load() > 0 {
				t.Fatalf("%d of %d reads stale", stale.Load(), rounds)
			}
		})
	}
}

// bedChannel binds a channel of s's session on node n and returns it,
// connected to s's tree.
func bedChannel(t *testing.T, s *servertest.Conn, n *framework.ClusterNode) *servertest.Conn {
	t.Helper()
	ch := servertest.Dial(t, n.Addr)
	ch.ClientGUID = s.ClientGUID
	if err := ch.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := ch.Bind(s.Session, bedUser, bedPass); err != nil {
		t.Fatalf("binding a channel on %s: %v", n.Name, err)
	}
	ch.TreeID = s.TreeID
	t.Cleanup(func() { ch.Close() })
	return ch
}

// roundData is what round i writes: small (under the zero-copy
// threshold) on even rounds, large (64 KiB and more) on odd ones, its
// size and bytes different from the round before.
func roundData(i int) []byte {
	size := 1000 + (i%7)*97
	if i%2 == 1 {
		size = 64<<10 + (i%5)*4096 + i%3
	}
	p := make([]byte, size)
	for j := range p {
		p[j] = byte(i*31 + j*7 + j>>8)
	}
	return p
}

// writeReadRound overwrites name through w with round i's bytes and reads
// it back through r, each with an open of its own; the READs go on via, r
// or a channel of r's session. A size in the reading open's CREATE
// response other than the size written is stale too (got is then that
// many zeros).
func writeReadRound(w, r, via *servertest.Conn, name string, i int) (got, want []byte, err error) {
	want = roundData(i)
	req := servertest.CreateRequest(name)
	req.CreateDisposition = smb2.FileOverwriteIf
	resp, err := w.CreateWith(req)
	if err != nil {
		return nil, nil, fmt.Errorf("open to write: %w", err)
	}
	for off := 0; off < len(want); off += 64 << 10 {
		end := min(off+64<<10, len(want))
		if _, err := w.Write(resp.FileID, uint64(off), want[off:end]); err != nil {
			return nil, nil, fmt.Errorf("write: %w", err)
		}
	}
	if err := w.CloseFile(resp.FileID); err != nil {
		return nil, nil, err
	}
	rresp, err := r.CreateWith(servertest.CreateRequest(name))
	if err != nil {
		return nil, nil, fmt.Errorf("open to read: %w", err)
	}
	fid := rresp.FileID
	defer r.CloseFile(fid)
	if rresp.EndOfFile != uint64(len(want)) {
		// A stale size: say so with as many bytes as it claims.
		return make([]byte, rresp.EndOfFile), want, nil
	}
	for off := 0; ; {
		p, err := via.Read(fid, uint64(off), 128<<10)
		if errors.Is(err, smb2.StatusEndOfFile) {
			return got, want, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read at %d: %w", off, err)
		}
		got = append(got, p...)
		off += len(p)
		if len(p) == 0 || len(got) > 2*len(want) {
			return got, want, nil
		}
	}
}

// TestBedClientDefaultsRefused: GlusterFS with its client's and volume's
// defaults caches what another mount wrote; the nodes' storage check must
// find it and refuse the share (smbctl share ls shows every node's view
// refused, with the reason; TREE_CONNECT answers STATUS_BAD_NETWORK_NAME),
// and while it is still served no read may be stale.
func TestBedClientDefaultsRefused(t *testing.T) {
	refusedNeverStale(t, bedFor(t, "glusterfs", true))
}

// TestBedCachingVolumeRefused: GlusterFS mounted with the coherent FUSE
// options but with the volume's caching translators on (its defaults:
// write-behind, md-cache …) serves reads through one node of what another
// wrote stale (55 of 100 rounds measured); the storage check must refuse
// the share, and never serve a stale byte meanwhile.
func TestBedCachingVolumeRefused(t *testing.T) {
	refusedNeverStale(t, bedFor(t, "glusterfs-caching-volume", false))
}

// refusedNeverStale checks that bed b, on incoherent storage, ends with
// every node refusing share data (with a reason; TREE_CONNECT answers
// STATUS_BAD_NETWORK_NAME), and that while nodes still serve it a read
// through one of what another wrote is never stale.
func refusedNeverStale(t *testing.T, b *framework.Bed) {
	// The stale-read probe: once the nodes have decided, while two or
	// more still serve the share, a read through one of what another
	// wrote must be fresh.
	framework.WaitFor(t, clusterDeadline, "every node's check of share data decided", func() bool {
		views := shareViews(t, b, bedShare)
		decided := 0
		for _, v := range views {
			if v.State == "serving" || v.State == "refused" {
				decided++
			}
		}
		return decided >= len(b.Nodes)
	})
	var serving []*servertest.Conn
	for _, n := range b.Nodes {
		if c, ok := tryConnect(t, n); ok {
			serving = append(serving, c)
		}
	}
	if len(serving) >= 2 {
		for i := range 100 {
			// Written through one serving node, read through the next.
			w, r := serving[i%len(serving)], serving[(i+1)%len(serving)]
			got, want, err := writeReadRound(w, r, r, "bed-refused.bin", i)
			if err != nil {
				break // refused meanwhile
			}
			if !bytes.Equal(got, want) {
				t.Errorf("round %d: a stale read (%d bytes, want %d) through a node serving the share on incoherent storage", i, len(got), len(want))
				break
			}
		}
	}
	for _, c := range serving {
		c.Close()
	}
	framework.WaitFor(t, clusterDeadline, "every node refusing share data", func() bool {
		return allViews(t, b, "refused")
	})
	for _, v := range shareViews(t, b, bedShare) {
		if v.Reason == "" {
			t.Errorf("%s refuses share data without a reason", v.Node)
		}
		t.Logf("%s: %s: %s", v.Node, v.State, v.Reason)
	}
	for _, n := range b.Nodes {
		s := bedLogon(t, n)
		if _, err := s.TreeConnect(bedShare); !errors.Is(err, smb2.StatusBadNetworkName) {
			t.Errorf("TREE_CONNECT to a refused share through %s: %v, want STATUS_BAD_NETWORK_NAME", n.Name, err)
		}
		s.Close()
	}
}

// bedLogon logs gina on through n (no tree yet).
func bedLogon(t *testing.T, n *framework.ClusterNode) *servertest.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := servertest.NewConn(t, nc)
	if err := s.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := s.SessionSetup(bedUser, bedPass); err != nil {
		t.Fatal(err)
	}
	return s
}

// tryConnect connects gina to share data through n once: false if the
// share is not served (or not yet).
func tryConnect(t *testing.T, n *framework.ClusterNode) (*servertest.Conn, bool) {
	t.Helper()
	s := bedLogon(t, n)
	if _, err := s.TreeConnect(bedShare); err != nil {
		s.Close()
		return nil, false
	}
	return s, true
}
