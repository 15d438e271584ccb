package smbc

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/sockio"
)

// fakeServer answers every READ with n bytes and every WRITE with its
// length, from fixed buffers: it allocates nothing per request, so the
// allocations counted around it are the client's.
func fakeServer(t *testing.T, nc net.Conn, n int) {
	read := frame(smb2.CmdRead, 0, smb2.StatusSuccess, make([]byte, smb2.ReadResponseFixedSize+n))
	body := read[smb2.TransportHeaderSize+smb2.HeaderSize:]
	binary.LittleEndian.PutUint16(body, 17)
	body[2] = smb2.ReadResponseDataOffset
	binary.LittleEndian.PutUint32(body[4:], uint32(n))
	write := frame(smb2.CmdWrite, 0, smb2.StatusSuccess, make([]byte, 16))
	binary.LittleEndian.PutUint16(write[smb2.TransportHeaderSize+smb2.HeaderSize:], 17)
	create := frame(smb2.CmdCreate, 0, smb2.StatusSuccess, make([]byte, 88))
	binary.LittleEndian.PutUint16(create[smb2.TransportHeaderSize+smb2.HeaderSize:], 89)
	closed := frame(smb2.CmdClose, 0, smb2.StatusSuccess, make([]byte, 60))
	binary.LittleEndian.PutUint16(closed[smb2.TransportHeaderSize+smb2.HeaderSize:], 60)
	br := bufio.NewReaderSize(nc, 1<<20)
	req := make([]byte, 1<<20)
	for {
		if _, err := io.ReadFull(br, req[:smb2.TransportHeaderSize]); err != nil {
			return
		}
		_, size := smb2.ParseTransportHeader(req)
		if _, err := io.ReadFull(br, req[:size]); err != nil {
			return
		}
		resp := read
		switch smb2.Command(binary.LittleEndian.Uint16(req[12:])) {
		case smb2.CmdWrite:
			resp = write
			binary.LittleEndian.PutUint32(resp[smb2.TransportHeaderSize+smb2.HeaderSize+4:], binary.LittleEndian.Uint32(req[smb2.HeaderSize+4:]))
		case smb2.CmdCreate:
			resp = create
		case smb2.CmdClose:
			resp = closed
		}
		copy(resp[smb2.TransportHeaderSize+24:smb2.TransportHeaderSize+32], req[24:32]) // MessageId
		if _, err := nc.Write(resp); err != nil {
			t.Error(err)
			return
		}
	}
}

// TestAllocs pins what the doc promises: a READ or WRITE through the
// client allocates nothing.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	// Over TCP: the receiver reads with readv through the RawConn.
	cli, srv := tcpPair(t)
	go fakeServer(t, srv, 4096)
	c := &Conn{nc: cli, br: sockio.NewReader(cli, 64<<10), bw: sockio.NewWriter(cli), calls: map[uint64]*call{}, recvDone: make(chan struct{}),
		dialect: smb2.Dialect311, largeMTU: true, maxRead: 1 << 20, maxWrite: 1 << 20, avail: 1, o: Options{Credits: 64}}
	c.cond.L = &c.mu
	c.recv.c = c
	go c.recvLoop()
	defer func() { cli.Close(); <-c.recvDone }()
	f := &File{c: c}
	buf := make([]byte, 4096)
	for _, tc := range []struct {
		name string
		op   func() (int, error)
	}{
		{"READ", func() (int, error) { return f.ReadAt(buf, 0) }},
		{"WRITE", func() (int, error) { return f.WriteAt(buf, 0) }},
	} {
		if n, err := tc.op(); n != len(buf) || err != nil {
			t.Fatalf("%s: %d, %v", tc.name, n, err)
		}
		if a := testing.AllocsPerRun(1000, func() { tc.op() }); a != 0 {
			t.Errorf("%s: %.1f allocations per request, want 0", tc.name, a)
		}
	}
	// The open/close benchmark's sequence allocates nothing either.
	openClose := func() {
		f, err := c.OpenRead(`dir\file`)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	openClose()
	if a := testing.AllocsPerRun(1000, openClose); a != 0 {
		t.Errorf("CREATE+CLOSE: %.1f allocations, want 0", a)
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}
