package smbc

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// bindN binds n further channels of c's session to the server at addr.
func bindN(t *testing.T, c *Conn, addr string, n int) []*Conn {
	t.Helper()
	var out []*Conn
	for range n {
		b, err := c.Bind(t.Context(), addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		out = append(out, b)
	}
	return out
}

// spreadRoundTrip writes size bytes through m in blocks of bs from conc
// goroutines and reads them back the same way.
func spreadRoundTrip(t *testing.T, m *MultiFile, size, bs, conc int) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*13 + i>>11)
	}
	got := make([]byte, size)
	for _, write := range []bool{true, false} {
		var wg sync.WaitGroup
		errs := make(chan error, conc)
		for g := range conc {
			wg.Go(func() {
				for off := g * bs; off < size; off += conc * bs {
					end := min(off+bs, size)
					var err error
					if write {
						_, err = m.WriteAt(data[off:end], int64(off))
					} else {
						var n int
						if n, err = m.ReadAt(got[off:end], int64(off)); err == nil && n != end-off {
							err = fmt.Errorf("short read at %d: %d", off, n)
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("data read back differ from data written")
	}
}

// TestBind: channels bound to a session with every 3.x dialect, plain,
// signed (each response verified with the channel's own key) and
// encrypted, carry READs and WRITEs of one open, spread over all of them.
func TestBind(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range []uint16{smb2.Dialect300, smb2.Dialect302, smb2.Dialect311} {
		for _, mode := range []string{"plain", "signed", "encrypted"} {
			t.Run(fmt.Sprintf("%#04x/%s", d, mode), func(t *testing.T) {
				c := dial(t, srv, Options{Dialect: d, Sign: mode == "signed", Encrypt: mode == "encrypted"})
				chans := bindN(t, c, srv.Addr, 2)
				for _, b := range chans {
					if b.SessionID() != c.SessionID() || b.Signed() != c.Signed() || b.Encrypted() != c.Encrypted() {
						t.Fatalf("channel: session %#x signed %v encrypted %v; session %#x %v %v",
							b.SessionID(), b.Signed(), b.Encrypted(), c.SessionID(), c.Signed(), c.Encrypted())
					}
				}
				f, err := c.OpenFile("mc", true)
				if err != nil {
					t.Fatal(err)
				}
				m := f.Spread(chans...)
				spreadRoundTrip(t, m, 6<<20, 256<<10, 12)
				for i, ch := range m.Channels() {
					if st := ch.Stats(); st.Reads == 0 || st.Writes == 0 || st.ReadBytes == 0 || st.WriteBytes == 0 {
						t.Errorf("channel %d carried %+v", i, st)
					}
				}
				// The open is one: closed through a bound channel, it is gone on the first.
				if err := f.On(chans[1]).Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := f.ReadAt(make([]byte, 10), 0); !isStatus(err, smb2.StatusFileClosed) {
					t.Fatalf("READ on channel 1 after CLOSE on channel 3: %v, want STATUS_FILE_CLOSED", err)
				}
				// Closing a bound channel leaves the session working.
				chans[0].Close()
				if err := c.Remove("mc"); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestBindRefused: a bind with a wrong password, on a 2.1 connection, or
// of a session that does not exist is refused with the server's status.
func TestBindRefused(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := dial(t, srv, Options{Dialect: smb2.Dialect311})
	wrong := c.o
	wrong.Password = "wrong"
	if _, err := c.bindAs(t.Context(), srv.Addr, wrong, c.sessionID); !isStatus(err, smb2.StatusLogonFailure) && !isStatus(err, smb2.StatusAccessDenied) {
		t.Errorf("bind with a wrong password: %v", err)
	}
	if _, err := c.bindAs(t.Context(), srv.Addr, c.o, c.sessionID^0x5a5a); !isStatus(err, smb2.StatusUserSessionDeleted) {
		t.Errorf("bind of no session: %v, want STATUS_USER_SESSION_DELETED", err)
	}
	old := dial(t, srv, Options{Dialect: smb2.Dialect210})
	if _, err := old.Bind(t.Context(), srv.Addr); err == nil {
		t.Error("bind of a 2.1 session succeeded")
	}
	// The session is unharmed.
	if _, err := c.OpenFile("still", true); err != nil {
		t.Fatal(err)
	}
	c.Remove("still")
}

// TestSpreadSurvivesLostChannel: a channel whose connection dies while
// requests are in flight on it costs the MultiFile that channel, not a
// request: every READ and WRITE completes and the data are intact.
func TestSpreadSurvivesLostChannel(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := dial(t, srv, Options{Dialect: smb2.Dialect311, Sign: true})
	chans := bindN(t, c, srv.Addr, 2)
	f, err := c.OpenFile("lost", true)
	if err != nil {
		t.Fatal(err)
	}
	m := f.Spread(chans...)
	victim := chans[0]
	// Cut the victim's connection once it has carried some WRITEs, while
	// the round trip goes on.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for victim.Stats().Writes < 4 && victim.Err() == nil {
			runtime.Gosched()
		}
		victim.nc.Close()
	}()
	spreadRoundTrip(t, m, 16<<20, 128<<10, 16)
	<-done
	if victim.Err() == nil {
		t.Fatal("the victim's connection did not fail")
	}
	if slices.Contains(m.Channels(), victim) {
		t.Error("the lost channel is still in use")
	}
	if len(m.Channels()) != 2 {
		t.Errorf("%d channels left, want 2", len(m.Channels()))
	}
	// With every channel gone, requests fail with the cause.
	for _, ch := range m.Channels() {
		ch.nc.Close()
	}
	if _, err := m.ReadAt(make([]byte, 10), 0); err == nil {
		t.Fatal("READ with no channel left succeeded")
	}
}

// TestInterfaces: the server's interface list as the client decodes it,
// and the channel addresses made of it (one per interface, the session's
// port).
func TestInterfaces(t *testing.T) {
	ifs := []server.Interface{
		{Index: 1, IP: net.ParseIP("127.0.0.1"), LinkSpeed: 1e9, RSS: true},
		{Index: 1, IP: net.ParseIP("127.0.0.4"), LinkSpeed: 1e9, RSS: true},
		{Index: 2, IP: net.ParseIP("127.0.0.2"), LinkSpeed: 25e9},
		{Index: 3, IP: net.ParseIP("::1"), LinkSpeed: 10e9, RSS: true},
	}
	srv := servertest.Start(t, servertest.Options{Interfaces: ifs})
	c := dial(t, srv, Options{})
	got, err := c.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ifs) {
		t.Fatalf("%d interfaces, want %d: %+v", len(got), len(ifs), got)
	}
	for i, g := range got {
		w := ifs[i]
		if g.Index != w.Index || !g.IP.Equal(w.IP) || g.LinkSpeed != w.LinkSpeed || g.RSS != w.RSS {
			t.Errorf("interface %d: %+v, want %+v", i, g, w)
		}
	}
	want := []string{"127.0.0.1:445", "127.0.0.2:445", "[::1]:445"}
	if addrs := ChannelAddrs("10.0.0.1:445", got); !slices.Equal(addrs, want) {
		t.Errorf("ChannelAddrs = %q, want %q", addrs, want)
	}
	if addrs := ChannelAddrs("127.0.0.2:445", got); !slices.Equal(addrs, []string{"127.0.0.2:445", "127.0.0.1:445", "[::1]:445"}) {
		t.Errorf("ChannelAddrs from 127.0.0.2 = %q, want it first", addrs)
	}
	if addrs := ChannelAddrs("10.0.0.1:445", nil); !slices.Equal(addrs, []string{"10.0.0.1:445"}) {
		t.Errorf("ChannelAddrs with no interfaces = %q", addrs)
	}
}
