package framework

import (
	"bufio"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ioDeadline bounds every read and write of these tests, so that a
// forwarder that fails to pass something on fails the test, not hangs it.
const ioDeadline = 20 * time.Second

// backend is a TCP server on loopback that hands each connection to serve.
func backend(t *testing.T, serve func(c *net.TCPConn)) string {
	t.Helper()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.AcceptTCP()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(ioDeadline))
			go serve(c)
		}
	}()
	return l.Addr().String()
}

func dial(t *testing.T, f *RoundRobin) *net.TCPConn {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(ioDeadline))
	return c
}

// TestRoundRobinAlternates: each new connection reaches the next backend
// in turn, and bytes pass both ways.
func TestRoundRobinAlternates(t *testing.T) {
	var addrs []string
	for i := range 3 {
		name := "backend" + strconv.Itoa(i)
		addrs = append(addrs, backend(t, func(c *net.TCPConn) {
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				io.WriteString(c, name+" got "+line)
			}
		}))
	}
	f := StartRoundRobin(t, addrs...)
	var got []string
	for i := range 7 {
		c := dial(t, f)
		if _, err := io.WriteString(c, "hello "+strconv.Itoa(i)+"\n"); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		got = append(got, strings.TrimSpace(string(b)))
	}
	want := []string{
		"backend0 got hello 0", "backend1 got hello 1", "backend2 got hello 2",
		"backend0 got hello 3", "backend1 got hello 4", "backend2 got hello 5",
		"backend0 got hello 6",
	}
	if !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if p := f.Placed(); !slices.Equal(p, []int{3, 2, 2}) {
		t.Errorf("Placed() = %v, want [3 2 2]", p)
	}
	f.Rewind()
	c := dial(t, f)
	io.WriteString(c, "after rewind\n")
	if b, err := io.ReadAll(c); err != nil || string(b) != "backend0 got after rewind\n" {
		t.Errorf("after Rewind: %q %v, want backend0's answer", b, err)
	}
}

// TestRoundRobinHalfClose: the client's end of stream reaches the backend
// as one while the other direction stays open; the backend's answer, sent
// after it saw the end, reaches the client, and then the backend's close.
func TestRoundRobinHalfClose(t *testing.T) {
	addr := backend(t, func(c *net.TCPConn) {
		defer c.Close()
		b, err := io.ReadAll(c) // until the client's half-close
		if err != nil {
			return
		}
		io.WriteString(c, "read "+strconv.Itoa(len(b))+" bytes")
	})
	f := StartRoundRobin(t, addr)
	c := dial(t, f)
	payload := strings.Repeat("x", 1<<20)
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "read 1048576 bytes"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
}

// TestRoundRobinBackendEndEndsClient: a backend that closes or resets its
// connection (as a server does on a protocol error) ends the client's.
func TestRoundRobinBackendEndEndsClient(t *testing.T) {
	for name, end := range map[string]func(c *net.TCPConn){
		"close": func(c *net.TCPConn) { c.Close() },
		"reset": func(c *net.TCPConn) { c.SetLinger(0); c.Close() },
	} {
		t.Run(name, func(t *testing.T) {
			f := StartRoundRobin(t, backend(t, func(c *net.TCPConn) {
				if _, err := io.ReadFull(c, make([]byte, 1)); err == nil { // the pair is up
					end(c)
				}
			}))
			c := dial(t, f)
			if _, err := c.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
				t.Errorf("read after the backend ended: %d, %v; want the connection ended", n, err)
			}
		})
	}
}

// TestRoundRobinUnreachableBackend: a backend that refuses the connection
// ends the client's, and the next connection goes to the next backend.
func TestRoundRobinUnreachableBackend(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	up := backend(t, func(c *net.TCPConn) { io.WriteString(c, "up"); c.Close() })
	f := StartRoundRobin(t, refused, up)
	if b, err := io.ReadAll(dial(t, f)); err != nil && !isReset(err) || len(b) != 0 {
		t.Errorf("through the refusing backend: %q %v, want an empty end", b, err)
	}
	if b, err := io.ReadAll(dial(t, f)); err != nil || string(b) != "up" {
		t.Errorf("through the next backend: %q %v, want \"up\"", b, err)
	}
}

// TestRoundRobinCloseEndsAll: Close ends every forwarded connection on
// both sides, returns only when its goroutines have ended, and refuses
// new connections.
func TestRoundRobinCloseEndsAll(t *testing.T) {
	ended := make(chan error, 4)
	addr := backend(t, func(c *net.TCPConn) {
		defer c.Close()
		io.WriteString(c, "hi")
		_, err := io.ReadAll(c) // until the forwarder ends it
		ended <- err
	})
	f, err := NewRoundRobin("127.0.0.1:0", []string{addr, addr})
	if err != nil {
		t.Fatal(err)
	}
	var clients []*net.TCPConn
	for range 4 {
		c := dial(t, f)
		if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
			t.Fatal(err) // the pair is up
		}
		clients = append(clients, c)
	}
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(ioDeadline):
		t.Fatalf("Close did not return within %v", ioDeadline)
	}
	f.mu.Lock()
	live := len(f.conns)
	f.mu.Unlock()
	if live != 0 {
		t.Errorf("%d connections still tracked after Close", live)
	}
	for i, c := range clients {
		if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("client %d after Close: read %d, %v; want the connection ended", i, n, err)
		}
	}
	for range 4 {
		if err := <-ended; isTimeout(err) {
			t.Errorf("backend side after Close: %v; want the connection ended", err)
		}
	}
	if c, err := net.DialTCP("tcp", nil, f.Addr()); err == nil {
		c.Close()
		t.Error("a connection accepted after Close")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// BenchmarkRoundRobin streams through the forwarder to a backend that
// discards, to compare with BenchmarkDirect: the forwarder splices, so it
// should cost little more than the second hop's kernel work.
func BenchmarkRoundRobin(b *testing.B) { benchmarkStream(b, true) }

// BenchmarkDirect is BenchmarkRoundRobin without the forwarder.
func BenchmarkDirect(b *testing.B) { benchmarkStream(b, false) }

func benchmarkStream(b *testing.B, forwarded bool) {
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	addr := l.Addr().(*net.TCPAddr)
	if forwarded {
		f, err := NewRoundRobin("127.0.0.1:0", []string{addr.String()})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		addr = f.Addr()
	}
	c, err := net.DialTCP("tcp", nil, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}
