package vfs

// ErrWouldBlock is what ReadAtNoWait answers when the data is not in
// memory: reading it would wait for the disk. Its WouldBlock method lets
// the engine, which does not import vfs, tell it from a failure.
var ErrWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string    { return "vfs: read would block" }
func (wouldBlock) WouldBlock() bool { return true }

// NoWaitReader is implemented by files that can read without waiting for
// the disk. The engine serves small requests in the connection's reader;
// a read that would block there stalls every request behind it, so the
// reader tries ReadAtNoWait first and hands the request to a goroutine on
// ErrWouldBlock.
type NoWaitReader interface {
	File
	// ReadAtNoWait is ReadAt from memory only: it returns ErrWouldBlock
	// (having read nothing the caller may use) when any of the bytes
	// asked for, up to the end of the file, is not cached.
	ReadAtNoWait(p []byte, off int64) (int, error)
	// Cached reports whether the n bytes at off are all in memory, so
	// that a sendfile of them will not wait for the disk. A backend that
	// cannot tell answers true.
	Cached(off int64, n int) bool
}
