package server

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The read loop's socket reads and every frame's writev go through
// node/sockio, which makes them RawSyscalls (see its package comment: the
// runtime's entersyscall woke its sysmon thread after every idle spell, and
// sysmon's 20 µs polling was 10–12 % of the server's CPU). The header and
// sendfile(2) of a READ served by the read loop are raw too: the loop
// serves a READ only when its pages are in the page cache (share checks
// with cachestat), so sendfile does not wait for the disk; an uncached
// READ leaves the loop and uses sendfile through the runtime's syscall
// path, which may. Measured (A/B, 64 KiB READ, one connection, 3 pairs):
// server CPU 0.53–0.56 → 0.45–0.47 s/GiB, throughput +5 %.
//
// The state of a call lives in the conn so that the callback is made once
// (a method value) and no call allocates; calls are made under wmu.
type rawIO struct {
	sendfileFn func(fd uintptr) bool
	iov        unix.Iovec
	werr       syscall.Errno
	hdr        []byte // sent with MSG_MORE before the file segment
	sfFd       uintptr
	sfOff      int64
	sfN        int
	short      bool // the file ended before sfN bytes
}

func (c *conn) initRawIO() {
	c.rio.sendfileFn = c.rawSendfileFn
}

// rawSendHeaderAndFile is sendHeaderAndFile for a READ of cached pages;
// the caller holds wmu.
func (c *conn) rawSendHeaderAndFile(hdr []byte, fd uintptr, off int64, n int) error {
	r := &c.rio
	r.hdr, r.sfFd, r.sfOff, r.sfN, r.werr, r.short = hdr, fd, off, n, 0, false
	err := c.raw.Write(r.sendfileFn)
	r.hdr, r.iov = nil, unix.Iovec{}
	switch {
	case err != nil:
		return err
	case r.werr != 0:
		return os.NewSyscallError("sendfile", r.werr)
	case r.short:
		return errShortSendfile
	}
	return nil
}

func (c *conn) rawSendfileFn(s uintptr) bool {
	r := &c.rio
	for len(r.hdr) > 0 {
		r.iov.Base = unsafe.SliceData(r.hdr)
		r.iov.SetLen(len(r.hdr))
		msg := unix.Msghdr{Iov: &r.iov, Iovlen: 1}
		m, _, e := unix.RawSyscall(unix.SYS_SENDMSG, s, uintptr(unsafe.Pointer(&msg)), unix.MSG_MORE)
		switch e {
		case 0:
			r.hdr = r.hdr[m:]
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			r.werr = e
			return true
		}
	}
	for r.sfN > 0 {
		m, _, e := unix.RawSyscall6(unix.SYS_SENDFILE, s, r.sfFd, uintptr(unsafe.Pointer(&r.sfOff)), uintptr(r.sfN), 0, 0)
		switch {
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			return false
		case e != 0:
			r.werr = e
			return true
		case m == 0:
			r.short = true
			return true
		default:
			r.sfN -= int(m)
		}
	}
	return true
}
