package sockio

import (
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writer writes messages made of several buffers with writev(2), raw over
// TCP (see the package comment). Its callers serialize their calls; it
// allocates nothing per call.
type Writer struct {
	rc syscall.RawConn // nil: nc's net.Buffers path
	nc net.Conn

	fn    func(fd uintptr) bool
	bufs  [][]byte
	iov   [16]unix.Iovec
	errno syscall.Errno
	one   [1][]byte
	nbufs net.Buffers
}

// NewWriter returns a Writer of nc.
func NewWriter(nc net.Conn) *Writer {
	w := &Writer{nc: nc}
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			w.rc = rc
			w.fn = w.writev
		}
	}
	return w
}

// RawConn is the socket's syscall.RawConn, nil if it has none.
func (w *Writer) RawConn() syscall.RawConn { return w.rc }

// Write writes b whole.
func (w *Writer) Write(b []byte) error {
	w.one[0] = b
	err := w.Writev(w.one[:])
	w.one[0] = nil
	return err
}

// BuffersWriter is a connection that writes several buffers as one
// write, as a Writer asks of a connection that is not TCP when it has it
// (a connection relayed between nodes keeps a message whole so).
type BuffersWriter interface {
	WriteBuffers(bufs [][]byte) error
}

// Writev writes all of bufs, in order. It consumes bufs' slice headers
// (not their bytes), as net.Buffers.WriteTo does.
func (w *Writer) Writev(bufs [][]byte) error {
	if bw, ok := w.nc.(BuffersWriter); ok && w.rc == nil {
		return bw.WriteBuffers(bufs)
	}
	if w.rc == nil {
		w.nbufs = bufs
		_, err := w.nbufs.WriteTo(w.nc)
		w.nbufs = nil
		return err
	}
	w.bufs, w.errno = bufs, 0
	err := w.rc.Write(w.fn)
	clear(w.iov[:])
	w.bufs = nil
	if err != nil {
		return err
	}
	if w.errno != 0 {
		return os.NewSyscallError("writev", w.errno)
	}
	return nil
}

func (w *Writer) writev(fd uintptr) bool {
	for {
		for len(w.bufs) > 0 && len(w.bufs[0]) == 0 {
			w.bufs = w.bufs[1:]
		}
		if len(w.bufs) == 0 {
			return true
		}
		k := 0
		for _, b := range w.bufs {
			if k == len(w.iov) {
				break
			}
			if len(b) > 0 {
				w.iov[k].Base = unsafe.SliceData(b)
				w.iov[k].SetLen(len(b))
				k++
			}
		}
		n, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(k))
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
		m := int(n)
		for m > 0 {
			if m < len(w.bufs[0]) {
				w.bufs[0] = w.bufs[0][m:]
				break
			}
			m -= len(w.bufs[0])
			w.bufs = w.bufs[1:]
		}
	}
}
