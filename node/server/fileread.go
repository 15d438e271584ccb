package server

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"github.com/smbcluster/smbcluster/node/smb2"
	"golang.org/x/sys/unix"
)

// FileRange is what a FileReader answers a READ with: up to N bytes of
// File at Off, fewer only at the end of the file, and at least Min of
// them, else the READ fails with STATUS_END_OF_FILE.
type FileRange struct {
	File io.ReaderAt
	Off  int64
	N    int
	Min  uint32
}

// Optional interfaces of a FileRange's File, through which the engine
// moves its bytes without a copy or without waiting (rawio.go, the
// ARCHITECTURE's "Data path").
type (
	// FdFile is a file backed by an OS descriptor, which READs may send
	// with sendfile(2). The descriptor stays the file's.
	FdFile interface {
		Fd() uintptr
	}
	// NoWaitFile is a file that can read without waiting for the disk
	// (vfs.NoWaitReader): ReadAtNoWait fails with an error whose
	// WouldBlock method says so when the bytes are not all cached, and
	// Cached reports whether they are.
	NoWaitFile interface {
		ReadAtNoWait(p []byte, off int64) (int, error)
		Cached(off int64, n int) bool
	}
)

// readFile serves a READ of a FileReader: the handle checks it and
// returns the range, the engine decides how the bytes move. In the
// connection's reader a read must not wait for the disk: it reads with
// ReadAtNoWait, or sends with sendfile(2) what is cached, and hands the
// request to a goroutine (ErrWouldBlock) otherwise. A plain lone READ of
// at least the zero-copy threshold goes from the page cache to the socket
// with sendfile; the others are read into a buffer laid out for signing
// or sealing in place (readPayloadBuffer).
func (r *Request) readFile(h FileReader, req *smb2.ReadRequest) (Response, error) {
	fr, err := h.ReadRange(r, req)
	if err != nil {
		return nil, err
	}
	if r.remote != nil {
		if resp, ok, err := r.remote.take(h, fr); ok {
			return resp, err
		}
	}
	if fr.N == 0 {
		return &readPayload{ReadResponse: smb2.ReadResponse{DataOffset: 0x50}}, nil
	}
	cached := r.Tree == nil || r.Tree.Share.PageCacheReads()
	if ff, ok := fr.File.(FdFile); ok && cached && r.zeroCopy(uint32(fr.N)) {
		return r.sendfileRead(h, ff, fr)
	}
	if !cached && !r.MayWait() {
		return nil, ErrWouldBlock // pread, off the reader
	}
	buf, into := r.readPayloadBuffer(fr.N)
	var n int
	if nw, ok := fr.File.(NoWaitFile); ok && !r.MayWait() {
		n, err = nw.ReadAtNoWait(into, fr.Off)
		if wouldBlock(err) {
			putBuf(buf)
			return nil, ErrWouldBlock
		}
	} else {
		n, err = fr.File.ReadAt(into, fr.Off)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		putBuf(buf)
		return nil, err
	}
	if n == 0 || uint32(n) < fr.Min {
		putBuf(buf)
		return nil, smb2.StatusEndOfFile
	}
	h.ReadDone(fr.Off + int64(n))
	return &readPayload{
		ReadResponse: smb2.ReadResponse{DataOffset: 0x50, DataLength: uint32(n)},
		data:         into[:n],
		buf:          buf,
	}, nil
}

// wouldBlock reports whether err is a NoWaitFile's "would wait for the
// disk".
func wouldBlock(err error) bool {
	wb, ok := err.(interface{ WouldBlock() bool })
	return ok && wb.WouldBlock()
}

// sendfileRead answers a plain READ with a sendfile segment: the writer
// sends the header, then the file's bytes go from the page cache to the
// socket without passing through user space.
func (r *Request) sendfileRead(h FileReader, ff FdFile, fr FileRange) (Response, error) {
	fd := ff.Fd()
	size, err := fileSize(fd)
	if err != nil {
		return nil, err
	}
	off := fr.Off
	if off < 0 || off >= size {
		return nil, smb2.StatusEndOfFile
	}
	n := min(int64(fr.N), size-off)
	if uint32(n) < fr.Min {
		return nil, smb2.StatusEndOfFile
	}
	if nw, ok := fr.File.(NoWaitFile); ok && !r.MayWait() && !nw.Cached(off, int(n)) {
		return nil, ErrWouldBlock // sendfile would wait for the disk
	}
	h.ReadDone(off + n)
	return &sendfileSegment{
		ReadResponse: smb2.ReadResponse{DataOffset: 0x50, DataLength: uint32(n)},
		fd:           fd, off: off, n: int(n),
	}, nil
}

// fileSize is the size of the file open on fd. Only the size matters
// here: one fstat, made raw as the read loop's socket calls are
// (node/sockio): fstat does not wait.
func fileSize(fd uintptr) (int64, error) {
	var st unix.Stat_t
	if _, _, e := unix.RawSyscall(unix.SYS_FSTAT, fd, uintptr(unsafe.Pointer(&st)), 0); e != 0 {
		return 0, os.NewSyscallError("fstat", e)
	}
	return st.Size, nil
}

// readPayload carries READ data in a pooled buffer, laid out by
// readPayloadBuffer.
type readPayload struct {
	smb2.ReadResponse
	data []byte
	buf  *[]byte
}

func (r *readPayload) Payload() []byte { return r.data }

// PayloadBuffer is the buffer Payload lies in (inPlacePayload).
func (r *readPayload) PayloadBuffer() *[]byte { return r.buf }
func (r *readPayload) Release() {
	putBuf(r.buf)
	r.buf = nil
}

// sendfileSegment is a READ answered from the file by the connection's writer.
type sendfileSegment struct {
	smb2.ReadResponse
	fd  uintptr
	off int64
	n   int
}

func (r *sendfileSegment) Segment() (uintptr, int64, int) { return r.fd, r.off, r.n }
func (r *sendfileSegment) Release()                       {}
