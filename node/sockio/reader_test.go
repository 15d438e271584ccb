package sockio

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

// replaySockReader drives a sockReader over conn with the operations ops
// encodes while another goroutine writes stream in chunks, and checks that
// every byte comes out in order, once.
func replaySockReader(t *testing.T, cli, srv net.Conn, stream, ops []byte, bufSize int) {
	t.Helper()
	go func() {
		rest := stream
		for i := 0; len(rest) > 0; i++ {
			n := min(len(rest), 1+int(ops[i%len(ops)])*97)
			if _, err := srv.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		srv.Close()
	}()
	s := NewReader(cli, bufSize)
	pos := 0
	for i := 0; pos < len(stream); i++ {
		op := ops[i%len(ops)]
		s.SetBulk(op&0x80 != 0)
		left := len(stream) - pos
		switch op % 4 {
		case 0, 1: // readFull, small or large
			n := min(left, int(op)*13+1)
			if op%4 == 1 {
				n = min(left, int(op)*700+BulkMin)
			}
			p := make([]byte, n)
			if err := s.ReadFull(p); err != nil {
				t.Fatalf("readFull(%d) at %d: %v", n, pos, err)
			}
			if !bytes.Equal(p, stream[pos:pos+n]) {
				t.Fatalf("readFull(%d) at %d: wrong bytes", n, pos)
			}
			pos += n
		case 2: // peek
			n := min(left, int(op)%bufSize+1, bufSize)
			p, err := s.Peek(n)
			if err != nil {
				t.Fatalf("peek(%d) at %d: %v", n, pos, err)
			}
			if !bytes.Equal(p, stream[pos:pos+n]) {
				t.Fatalf("peek(%d) at %d: wrong bytes", n, pos)
			}
			// Consume a byte, so that any ops make progress.
			var b [1]byte
			if err := s.ReadFull(b[:]); err != nil || b[0] != stream[pos] {
				t.Fatalf("byte after peek at %d: %v", pos, err)
			}
			pos++
		case 3: // discard
			n := min(left, int(op)*301)
			if err := s.Discard(n); err != nil {
				t.Fatalf("discard(%d) at %d: %v", n, pos, err)
			}
			pos += n
		}
		if s.Buffered() < 0 || s.Buffered() > bufSize {
			t.Fatalf("buffered %d of %d", s.Buffered(), bufSize)
		}
	}
	// The stream is over: one more byte is an EOF, a longer read that
	// began in it is unexpected.
	if err := s.ReadFull(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read past the end: %v, want EOF", err)
	}
}

func testStream(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// transports are the connections the tests run over: TCP, read and written
// with raw readv and writev, and a pipe, with Read and Write.
var transports = []struct {
	name string
	pair func(testing.TB) (net.Conn, net.Conn)
}{
	{"tcp", tcpPair},
	{"pipe", func(testing.TB) (net.Conn, net.Conn) { return net.Pipe() }},
}

// TestSockReader: over TCP (readv, raw) and over a pipe (Read), random
// mixes of reads, peeks and discards see the stream in order.
func TestSockReader(t *testing.T) {
	for _, tc := range transports {
		for seed := uint64(1); seed <= 8; seed++ {
			cli, srv := tc.pair(t)
			ops := testStream(64, seed)
			replaySockReader(t, cli, srv, testStream(3<<20, seed), ops, []int{4096, 64 << 10}[seed%2])
			if tc.name == "pipe" {
				cli.Close()
			}
		}
	}
}

// TestSockReaderShortStream: a stream that ends inside a read is an
// unexpected EOF, at its start a plain EOF.
func TestSockReaderShortStream(t *testing.T) {
	cli, srv := tcpPair(t)
	srv.Write([]byte("abc"))
	srv.Close()
	s := NewReader(cli, 4096)
	if s.rc == nil {
		t.Fatal("a TCP connection is read without readv")
	}
	if err := s.ReadFull(make([]byte, 5)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("5 bytes of 3: %v", err)
	}
	if _, err := s.Peek(1); err != io.EOF {
		t.Fatalf("peek after the end: %v", err)
	}
	if err := s.Discard(1); err != io.EOF {
		t.Fatalf("discard after the end: %v", err)
	}
}

// FuzzSockReader: any mix of operations and chunk sizes over TCP sees the
// stream in order.
func FuzzSockReader(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, uint16(1000))
	f.Add([]byte{0x81, 0x81, 0x02, 0x83, 0x00}, uint16(60000))
	f.Fuzz(func(t *testing.T, ops []byte, size uint16) {
		if len(ops) == 0 {
			return
		}
		cli, srv := tcpPair(t)
		replaySockReader(t, cli, srv, testStream(int(size)+1, uint64(size)), ops, 4096)
	})
}

// TestWriter: over TCP (raw writev) and a pipe, messages of many parts —
// empty ones, more than one iovec array's worth — arrive whole and in
// order.
func TestWriter(t *testing.T) {
	for _, tc := range transports {
		cli, srv := tc.pair(t)
		stream := testStream(4<<20, 7)
		done := make(chan []byte)
		go func() {
			got, _ := io.ReadAll(srv)
			done <- got
		}()
		w := NewWriter(cli)
		if (w.RawConn() != nil) != (tc.name == "tcp") {
			t.Fatalf("%s: RawConn %v", tc.name, w.RawConn())
		}
		r := rand.New(rand.NewPCG(3, 4))
		bufs := make([][]byte, 0, 40)
		for rest := stream; len(rest) > 0; {
			bufs = bufs[:0]
			for k := r.IntN(40); k >= 0 && len(rest) > 0; k-- {
				n := min(len(rest), r.IntN(3)*r.IntN(70000))
				bufs = append(bufs, rest[:n])
				rest = rest[n:]
			}
			if err := w.Writev(bufs); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if err := w.Write(nil); err != nil {
			t.Fatalf("%s: empty write: %v", tc.name, err)
		}
		cli.Close()
		if got := <-done; !bytes.Equal(got, stream) {
			t.Fatalf("%s: %d bytes arrived, want the %d written", tc.name, len(got), len(stream))
		}
	}
}

// TestAllocs: reading and writing over TCP allocates nothing per call.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	cli, srv := tcpPair(t)
	w, r := NewWriter(cli), NewReader(srv, 4096)
	msg := [][]byte{make([]byte, 84), make([]byte, 32<<10)}
	got := make([]byte, 84+32<<10)
	parts := make([][]byte, 2)
	allocs := testing.AllocsPerRun(200, func() {
		copy(parts, msg)
		if err := w.Writev(parts); err != nil {
			t.Fatal(err)
		}
		if err := r.ReadFull(got); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per message, want 0", allocs)
	}
}
