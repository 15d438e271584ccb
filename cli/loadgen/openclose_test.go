package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/node/servertest"
)

func smbOpts(share string, addrs ...string) SMBOptions {
	return SMBOptions{Addr: addrs[0], Addrs: addrs, Share: share, User: servertest.Alice,
		Password: servertest.AlicePassword, Credits: 128}
}

func openConfig(hot bool) OpenConfig {
	return OpenConfig{Conns: 2, IODepth: 2, Files: 5, Hot: hot, ReadSize: 4096, Dir: "bench.open",
		Runtime: 200 * time.Millisecond, Seed: 3}
}

// TestRunOpen runs both variants with both clients against the in-process
// server: every sequence's read is checked, and the files are gone after.
func TestRunOpen(t *testing.T) {
	root := t.TempDir()
	srv := servertest.Start(t, servertest.Options{DiskRoot: root})
	targets := map[string]OpenTarget{
		"native":  NewNativeOpenTarget(smbOpts(servertest.DiskShareName, srv.Addr)),
		"go-smb2": NewSMBOpenTarget(smbOpts(servertest.DiskShareName, srv.Addr)),
	}
	for name, tgt := range targets {
		for _, hot := range []bool{false, true} {
			cfg := openConfig(hot)
			st, err := RunOpen(t.Context(), tgt, cfg)
			if err != nil {
				t.Fatalf("%s hot=%t: %v", name, hot, err)
			}
			if st.Ops == 0 || st.Latency.Count() != uint64(st.Ops) || st.ReadBytes != st.Ops*4096 {
				t.Errorf("%s hot=%t: ops %d, latencies %d, read %d", name, hot, st.Ops, st.Latency.Count(), st.ReadBytes)
			}
			if st.Mismatches != 0 || st.Verified < st.Ops {
				t.Errorf("%s hot=%t: verified %d, mismatches %d", name, hot, st.Verified, st.Mismatches)
			}
			if want := map[bool]int{false: 20, true: 1}[hot]; st.Files != want {
				t.Errorf("%s hot=%t: %d files, want %d", name, hot, st.Files, want)
			}
			if _, err := os.Stat(filepath.Join(root, cfg.Dir)); !os.IsNotExist(err) {
				t.Errorf("%s hot=%t: directory left behind (%v)", name, hot, err)
			}
		}
	}
}

// TestRunOpenSpreadsConnections: with several addresses connection i goes
// to server i mod n.
func TestRunOpenSpreadsConnections(t *testing.T) {
	root := t.TempDir()
	a := servertest.Start(t, servertest.Options{DiskRoot: root})
	b := servertest.Start(t, servertest.Options{DiskRoot: root})
	cfg := openConfig(false)
	cfg.Conns = 4
	counts := map[*servertest.Server]int{}
	tgt := NewNativeOpenTarget(smbOpts(servertest.DiskShareName, a.Addr, b.Addr))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var conns []OpenConn
	for i := range cfg.Conns {
		c, err := tgt.Dial(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, s := range []*servertest.Server{a, b} {
		counts[s] = len(s.Sessions())
	}
	for _, c := range conns {
		c.Close()
	}
	if counts[a] != 2 || counts[b] != 2 {
		t.Errorf("sessions per server %d and %d, want 2 and 2", counts[a], counts[b])
	}
}

func dialPair(t *testing.T, addrA, addrB, share string) (*smbc.Conn, *smbc.Conn) {
	t.Helper()
	var cs [2]*smbc.Conn
	for i, addr := range []string{addrA, addrB} {
		c, err := smbc.Dial(t.Context(), smbc.Options{Addr: addr, Share: share, User: servertest.Alice,
			Password: servertest.AlicePassword, Dialect: 0x311})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	return cs[0], cs[1]
}

// TestProbeBreaksOneServer: on one server every conflicting open breaks
// the holder's lease, and the server holds the open for the ack.
func TestProbeBreaksOneServer(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	a, b := dialPair(t, srv.Addr, srv.Addr, servertest.ShareName)
	st, err := ProbeBreaks(t.Context(), a, b, BreakConfig{Count: 20, Name: "probe.dat"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Tries != 20 || st.Waited != 20 || st.Missing != 0 || st.Late != 0 {
		t.Errorf("tries %d waited %d late %d missing %d, want 20 breaks the open waited for",
			st.Tries, st.Waited, st.Late, st.Missing)
	}
	if st.BreakLat.Count() != 20 || st.OpenLat.Count() != 20 || st.BreakLat.Max() > st.OpenLat.Max() {
		t.Errorf("latencies: %d breaks (max %d ns), %d opens (max %d ns)",
			st.BreakLat.Count(), st.BreakLat.Max(), st.OpenLat.Count(), st.OpenLat.Max())
	}
	if LeaseString(st.Granted) != "RWH" {
		t.Errorf("granted %s, want RWH", LeaseString(st.Granted))
	}
}

// TestProbeBreaksMissing: two servers sharing a directory without any
// coherence between them — what the nodes of a cluster are without it —
// never break; the probe reports every attempt missing instead of a time.
func TestProbeBreaksMissing(t *testing.T) {
	root := t.TempDir()
	s1 := servertest.Start(t, servertest.Options{DiskRoot: root})
	s2 := servertest.Start(t, servertest.Options{DiskRoot: root})
	a, b := dialPair(t, s1.Addr, s2.Addr, servertest.DiskShareName)
	st, err := ProbeBreaks(t.Context(), a, b, BreakConfig{Count: 3, Name: "probe.dat"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Missing != 3 || st.Waited != 0 || st.Late != 0 || st.BreakLat.Count() != 0 {
		t.Errorf("waited %d late %d missing %d, want 3 missing", st.Waited, st.Late, st.Missing)
	}
}

// memOpenConn is an in-memory OpenConn whose files all read back bad
// data when corrupt is set.
type memOpenConn struct {
	mu      *sync.Mutex
	files   map[string][]byte
	corrupt bool
}

func (m memOpenConn) OpenClose(name string, buf []byte) (int, error) {
	time.Sleep(time.Millisecond)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[name]
	if !ok {
		return 0, fmt.Errorf("%s: no such file", name)
	}
	n := copy(buf, d)
	if m.corrupt && n > 0 {
		buf[n-1] ^= 1
	}
	return n, nil
}

func (m memOpenConn) Put(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = slices.Clone(data)
	return nil
}

func (m memOpenConn) Mkdir(string) error { return nil }
func (m memOpenConn) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, name)
	return nil
}
func (m memOpenConn) RemoveDir(string) error { return nil }
func (m memOpenConn) Close() error           { return nil }

type memOpenTarget struct{ c memOpenConn }

func (t memOpenTarget) Dial(context.Context, int) (OpenConn, error) { return t.c, nil }

// TestRunOpenCounts: under synctest, 4 workers at 1 ms per sequence over a
// measured second make about 4000 measured sequences; bad data fails the
// run with ErrMismatch.
func TestRunOpenCounts(t *testing.T) {
	for _, corrupt := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			c := memOpenConn{mu: new(sync.Mutex), files: map[string][]byte{}, corrupt: corrupt}
			cfg := openConfig(false)
			cfg.Warmup, cfg.Runtime = 100*time.Millisecond, time.Second
			st, err := RunOpen(t.Context(), memOpenTarget{c}, cfg)
			if corrupt {
				if !errors.Is(err, ErrMismatch) || st.Mismatches != st.Verified {
					t.Fatalf("corrupt: err %v, %d of %d mismatched", err, st.Mismatches, st.Verified)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Ops < 3990 || st.Ops > 4000 || st.Total < st.Ops+390 {
				t.Errorf("ops %d (total %d), want ~4000 measured of ~4400", st.Ops, st.Total)
			}
			if len(c.files) != 0 {
				t.Errorf("%d files left", len(c.files))
			}
		})
	}
}
