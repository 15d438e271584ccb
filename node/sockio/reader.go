package smbc

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockReader is the receiver's view of the socket: a read-ahead buffer for
// headers and small responses, while bulk data goes straight into the
// caller's buffer. readFull copies what is buffered, then reads the rest of
// its destination and whatever follows (up to the buffer's size) with one
// readv(2): a READ's data crosses into user space once, and the next
// response's header usually arrives in the same call.
//
// It replaced a bufio.Reader of 64 KiB, which copied a READ's data twice
// whenever the socket held more than the header (its fill took up to 64 KiB
// of data, copied out afterwards). Measured against Samba, one connection:
// 64 KiB READ 1.29–1.31 → 1.43–1.50 GiB/s with a quarter less client user
// CPU, 1 MiB READ 1.71 → 1.83 GiB/s, 4 KiB READ even.
//
// Over TCP the reads are RawSyscalls on the non-blocking socket (EAGAIN
// waits in the network poller): the runtime's syscall bookkeeping would wake
// its sysmon thread after each idle spell (see node/server/rawio.go), and
// the client's CPU is what a loopback benchmark spends most. Other
// connections (net.Pipe in tests) are read with Read.
type sockReader struct {
	rc     syscall.RawConn // nil: r.Read
	r      io.Reader
	buf    []byte
	lo, hi int // buffered bytes are buf[lo:hi]
	// bulk is set by the receiver while large messages come: every read
	// then stops bulkReadAhead bytes past what it needs.
	bulk bool

	// One raw call's arguments and results; only the receiver reads.
	fn    func(fd uintptr) bool
	iov   [2]unix.Iovec
	niov  int
	n     int
	errno syscall.Errno
}

// A destination of bulkMin bytes or more is read with at most bulkReadAhead
// bytes beyond it: enough for the headers of the next few responses (a
// READ's come to 84 bytes), too little to take much of the next READ's
// data. Chosen, not swept.
const (
	bulkMin       = 16 << 10
	bulkReadAhead = 512
)

func newSockReader(nc net.Conn, size int) *sockReader {
	s := &sockReader{r: nc, buf: make([]byte, size)}
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			s.rc = rc
			s.fn = s.readv
		}
	}
	return s
}

// buffered is the number of bytes read ahead.
func (s *sockReader) buffered() int { return s.hi - s.lo }

// readFull fills p, as io.ReadFull does.
func (s *sockReader) readFull(p []byte) error {
	got := copy(p, s.buf[s.lo:s.hi])
	s.lo += got
	p = p[got:]
	for len(p) > 0 {
		// The buffer is empty here: read the rest of p and read ahead —
		// after bulk data only a little, the next headers, or the next
		// READ's data would land in the buffer and be copied twice.
		ahead := s.buf
		if s.bulk || len(p) >= bulkMin {
			ahead = s.buf[:min(len(s.buf), bulkReadAhead)]
		}
		n, err := s.read(p, ahead)
		if n > len(p) {
			s.lo, s.hi = 0, n-len(p)
			n = len(p)
		}
		got += n
		p = p[n:]
		if err != nil && len(p) > 0 {
			if err == io.EOF && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// peek returns the next n bytes without consuming them; n is at most the
// buffer's size.
func (s *sockReader) peek(n int) ([]byte, error) {
	if n > len(s.buf) {
		return nil, io.ErrShortBuffer
	}
	for s.hi-s.lo < n {
		if s.lo > 0 {
			s.hi = copy(s.buf, s.buf[s.lo:s.hi])
			s.lo = 0
		}
		end := len(s.buf)
		if s.bulk {
			end = min(end, s.hi+bulkReadAhead)
		}
		m, err := s.read(s.buf[s.hi:end], nil)
		s.hi += m
		if err != nil && s.hi-s.lo < n {
			return nil, err
		}
	}
	return s.buf[s.lo : s.lo+n], nil
}

// discard skips n bytes.
func (s *sockReader) discard(n int) error {
	for {
		k := min(n, s.hi-s.lo)
		s.lo += k
		n -= k
		if n == 0 {
			return nil
		}
		s.lo, s.hi = 0, 0
		m, err := s.read(s.buf[:min(len(s.buf), max(n, bulkReadAhead))], nil)
		s.hi = m
		if err != nil && m == 0 {
			return err
		}
	}
}

// read is one read into a, then b (b may be nil). It returns at least one
// byte or an error; io.EOF when the peer closed.
func (s *sockReader) read(a, b []byte) (int, error) {
	if s.rc == nil {
		// Without readv: a large a is read directly, a small one
		// through b when there is one.
		if b != nil && len(a) < len(b) {
			n, err := s.r.Read(b)
			if n > 0 {
				k := copy(a, b[:n])
				if k < n {
					copy(b, b[k:n])
				}
				return n, nil
			}
			return 0, eofIfNil(err)
		}
		n, err := s.r.Read(a)
		if n > 0 {
			return n, nil
		}
		return 0, eofIfNil(err)
	}
	s.iov[0].Base = unsafe.SliceData(a)
	s.iov[0].SetLen(len(a))
	s.niov = 1
	if len(b) > 0 {
		s.iov[1].Base = unsafe.SliceData(b)
		s.iov[1].SetLen(len(b))
		s.niov = 2
	}
	s.n, s.errno = 0, 0
	err := s.rc.Read(s.fn)
	s.iov = [2]unix.Iovec{} // hold no buffer past the call
	switch {
	case err != nil:
		return 0, err
	case s.errno != 0:
		return 0, os.NewSyscallError("readv", s.errno)
	case s.n == 0:
		return 0, io.EOF
	}
	return s.n, nil
}

func (s *sockReader) readv(fd uintptr) bool {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&s.iov[0])), uintptr(s.niov))
		switch e {
		case 0:
			s.n = int(n)
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			s.errno = e
		}
		return true
	}
}

func eofIfNil(err error) error {
	if err == nil {
		return io.ErrNoProgress
	}
	return err
}
