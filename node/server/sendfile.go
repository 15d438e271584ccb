package server

import (
	"errors"
	"net"
	"syscall"

	"github.com/smbcluster/smbcluster/node/smb2"
	"golang.org/x/sys/unix"
)

// errShortSendfile means the file shrank under a zero-copy READ after its
// header promised more data: the stream cannot be repaired.
var errShortSendfile = errors.New("server: file shorter than the READ header promised")

// rawConnOf returns the syscall.RawConn of a TCP connection, or nil.
func rawConnOf(nc net.Conn) syscall.RawConn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// writeSendfile queues a READ response whose data goes out with sendfile.
func (c *conn) writeSendfile(res *result, sf SendfileResponse) {
	_, _, n := sf.Segment()
	bodyLen := sf.Size()
	buf := getBuf(4 + smb2.HeaderSize + bodyLen)
	b := *buf
	res.hdr.Encode(b[4:])
	sf.Encode(b[4+smb2.HeaderSize:])
	smb2.PutTransportHeader(b, smb2.HeaderSize+bodyLen+n)
	w := newWritten(buf)
	w.file = sf
	w.hold(res.open)
	c.send(frame{parts: net.Buffers{b}, inline: res.inline, w: w})
}

// bufferSendfile reads a sendfile response's data into a pooled buffer, for
// the rare response that must be signed or sealed after all.
func bufferSendfile(sf SendfileResponse) Response {
	fd, off, n := sf.Segment()
	buf := getBuf(n)
	got := 0
	for got < n {
		m, err := unix.Pread(int(fd), (*buf)[got:], off+int64(got))
		if m <= 0 || err != nil {
			break
		}
		got += m
	}
	// The header promised n bytes; a short read leaves zeros, as a file
	// truncated under a READ would read on Windows.
	clear((*buf)[got:])
	return &bufferedRead{sf: sf, buf: buf}
}

type bufferedRead struct {
	sf  SendfileResponse
	buf *[]byte
}

func (b *bufferedRead) Size() int       { return b.sf.Size() }
func (b *bufferedRead) Encode(p []byte) { b.sf.Encode(p) }
func (b *bufferedRead) Payload() []byte { return *b.buf }
func (b *bufferedRead) Release()        { putBuf(b.buf); b.sf.Release() }

// peerClosed reports whether the client has closed its end of the
// connection (a FIN or reset the reader has not consumed yet), by peeking
// at the socket without blocking. Unread data counts as alive.
func (c *conn) peerClosed() bool {
	if c.raw == nil {
		return false
	}
	closed := false
	c.raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err == unix.ECONNRESET || err == unix.EPIPE || err == unix.ENOTCONN
	})
	return closed
}
