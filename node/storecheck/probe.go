package storecheck

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"golang.org/x/sys/unix"
)

// maxProbe bounds a probe file's size: small enough that a socketpair's
// buffer takes it whole (sendfileBack), large enough to span pages.
const (
	minProbe = 5000
	maxProbe = 60000
)

// dir is a share's probe directory (statev1.StorageProbeDir) through this
// node's mount of the share.
type dir struct {
	fd int // O_RDONLY|O_DIRECTORY
}

// openDir opens, creating it if need be, the probe directory of the share
// rooted at root.
func openDir(root string) (*dir, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("share root %s: %w", root, err)
	}
	defer unix.Close(rfd)
	if err := unix.Mkdirat(rfd, statev1.StorageProbeDir, 0o700); err != nil && err != unix.EEXIST {
		return nil, fmt.Errorf("creating %s/%s: %w", root, statev1.StorageProbeDir, err)
	}
	fd, err := unix.Openat(rfd, statev1.StorageProbeDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s/%s: %w", root, statev1.StorageProbeDir, err)
	}
	return &dir{fd: fd}, nil
}

func (d *dir) close() { unix.Close(d.fd) }

// names lists the directory's entries.
func (d *dir) names() ([]string, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		_, _, out = unix.ParseDirent(buf[:n], -1, out)
	}
}

// prober is this node's side of a share's check: its probe file.
type prober struct {
	d      *dir
	prefix string // "<node>." : the node's files in the directory
	inc    string // this incarnation's tag in file names
	fd     int    // the probe file, O_RDWR; -1 before the first round
	round  uint64
	name   string
	marker string
	size   int
}

func newProber(d *dir, node string) *prober {
	var b [4]byte
	rand.Read(b[:])
	return &prober{d: d, prefix: strings.ToLower(node) + ".", inc: hex.EncodeToString(b[:]), fd: -1}
}

// next runs the next round: the probe file rewritten in place with new
// bytes, renamed, and its marker replaced. Odd rounds give it a new size,
// even rounds keep the size it had: a FUSE mount drops a file's cached
// pages when it sees the size change, so only a rewrite of the same size
// shows a page cache that another node's writes do not invalidate
// (ceph-fuse with its defaults: every such read through a kept descriptor
// is stale, every read after a resize fresh). It returns the round's
// record (the caller adds path and volume).
func (p *prober) next() (*statev1.StorageProbeRecord, error) {
	if p.fd < 0 {
		p.sweep()
	}
	round := p.round + 1
	name := p.prefix + p.inc + "." + strconv.FormatUint(round, 10)
	marker := name + ".marker"
	var data []byte
	if round%2 == 0 && p.size > 0 {
		data = make([]byte, p.size)
		rand.Read(data)
	} else {
		data = probeBytes(p.size)
	}
	if p.fd < 0 {
		fd, err := unix.Openat(p.d.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("creating the probe file: %w", err)
		}
		p.fd = fd
	}
	if err := pwriteAll(p.fd, data); err != nil {
		return nil, fmt.Errorf("writing the probe file: %w", err)
	}
	if err := unix.Ftruncate(p.fd, int64(len(data))); err != nil {
		return nil, fmt.Errorf("sizing the probe file: %w", err)
	}
	if p.name != "" {
		if err := unix.Renameat(p.d.fd, p.name, p.d.fd, name); err != nil {
			return nil, fmt.Errorf("renaming the probe file: %w", err)
		}
	}
	mfd, err := unix.Openat(p.d.fd, marker, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the marker file: %w", err)
	}
	unix.Close(mfd)
	if p.marker != "" {
		if err := unix.Unlinkat(p.d.fd, p.marker, 0); err != nil && err != unix.ENOENT {
			return nil, fmt.Errorf("deleting the marker file: %w", err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(p.fd, &st); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	rec := &statev1.StorageProbeRecord{
		Round: round, Name: name, PreviousName: p.name, Inode: st.Ino, Size: int64(len(data)), Sha256: sum[:],
		MarkerName: marker, DeletedName: p.marker,
	}
	p.round, p.name, p.marker, p.size = round, name, marker, len(data)
	return rec, nil
}

// sweep deletes the node's probe files of earlier incarnations.
func (p *prober) sweep() {
	names, err := p.d.names()
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, p.prefix) {
			unix.Unlinkat(p.d.fd, n, 0)
		}
	}
}

// remove deletes the probe file (the node stops serving the share).
func (p *prober) remove() {
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
	for _, n := range []string{p.name, p.marker} {
		if n != "" {
			unix.Unlinkat(p.d.fd, n, 0)
		}
	}
}

// probeBytes returns random bytes of a random size in [minProbe,
// maxProbe) other than not.
func probeBytes(not int) []byte {
	var b [4]byte
	rand.Read(b[:])
	n := minProbe + int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16)%(maxProbe-minProbe)
	if n == not {
		n++
	}
	data := make([]byte, n)
	rand.Read(data)
	return data
}

func pwriteAll(fd int, p []byte) error {
	for off := 0; off < len(p); {
		n, err := unix.Pwrite(fd, p[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

// peer is what a checker keeps of another node's probe between rounds.
type peer struct {
	fd       int    // the probe file as opened last round; -1 when none
	file     string // the probe file's name without its round (probeFile)
	inode    uint64
	round    uint64
	roundsOK uint32
	// failed is the finding of a failed round: it stands for the probe
	// file's life (a cache that went stale once may be fresh when
	// checked again later, and stale again when clients use it).
	failed error
}

func newPeer() *peer { return &peer{fd: -1} }

func (pr *peer) close() {
	if pr.fd >= 0 {
		unix.Close(pr.fd)
		pr.fd = -1
	}
}

// errIncoherent is a check's finding: what this node's mount showed of
// another node's round.
type errIncoherent struct{ what string }

func (e *errIncoherent) Error() string { return e.what }

func incoherent(format string, a ...any) error {
	return &errIncoherent{fmt.Sprintf(format, a...)}
}

// check reads rec, a round of another node's probe, through d and
// reports what it saw: an *errIncoherent for a view that differs from
// the round's, another error when the check could not be made, and
// whether reads through the page cache alone were stale.
func (pr *peer) check(d *dir, rec *statev1.StorageProbeRecord) (cacheStale bool, err error) {
	file := probeFile(rec.Name)
	if file != pr.file {
		// A new probe file (a new incarnation of the prober, or its
		// probe made again): inode numbers may be reused, names are not.
		pr.failed, pr.file = nil, file
		pr.close()
		pr.roundsOK = 0
	}
	if pr.failed != nil {
		return false, pr.failed
	}
	if pr.fd >= 0 && (rec.Inode != pr.inode || rec.Round != pr.round+1) {
		pr.close() // a new incarnation of the prober, or a round missed
		pr.roundsOK = 0
	}
	return pr.read(d, rec)
}

// fail makes err, a finding of rec's round, stand (peer.failed).
func (pr *peer) fail(rec *statev1.StorageProbeRecord, err error) {
	if isIncoherent(err) {
		pr.failed = err
	}
}

// probeFile is a probe file's name without its round: "NODE.INC".
func probeFile(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// read is check's reading of rec.
func (pr *peer) read(d *dir, rec *statev1.StorageProbeRecord) (cacheStale bool, err error) {
	if rec.PreviousName != "" {
		var st unix.Stat_t
		if err := unix.Fstatat(d.fd, rec.PreviousName, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			return false, incoherent("a rename through the other node's mount is not seen at once here (the old name is still there)")
		}
	}
	if rec.DeletedName != "" {
		var st unix.Stat_t
		if err := unix.Fstatat(d.fd, rec.DeletedName, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			return false, incoherent("a file deleted through the other node's mount is still seen here")
		}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, rec.MarkerName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, incoherent("a file created through the other node's mount is not seen at once here (%v)", err)
	}
	if err := unix.Fstatat(d.fd, rec.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, incoherent("the other node's renamed probe file is not seen at once here (%v)", err)
	}
	if st.Ino != rec.Inode {
		return false, incoherent("inode numbers differ between the nodes' mounts (%d there, %d here): files cannot be named alike on every node", rec.Inode, st.Ino)
	}
	if st.Size != rec.Size {
		return false, incoherent("stale file size: %d bytes here, %d written through the other node's mount", st.Size, rec.Size)
	}
	fd, err := unix.Openat(d.fd, rec.Name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("opening the other node's probe file: %w", err)
	}
	kept := pr.fd
	pr.fd, pr.inode, pr.round = fd, rec.Inode, rec.Round
	defer func() {
		if kept >= 0 {
			unix.Close(kept)
		}
	}()
	for _, f := range []struct {
		fd   int
		what string
	}{{fd, "a fresh open"}, {kept, "a descriptor opened before the write"}} {
		if f.fd < 0 {
			continue
		}
		got, err := preadAll(f.fd, int(rec.Size)+1)
		if err != nil {
			return false, fmt.Errorf("reading the other node's probe file: %w", err)
		}
		if !sameBytes(got, rec) {
			return false, incoherent("stale data: a read through %s here returned other bytes than the other node wrote (%d of %d bytes)", f.what, len(got), rec.Size)
		}
		if stale, err := cacheReadsStale(f.fd, rec); err != nil {
			return false, err
		} else if stale {
			cacheStale = true
		}
	}
	return cacheStale, nil
}

// cacheReadsStale reports whether a read through the page cache alone
// — sendfile(2), as zero-copy READs send, and preadv2(RWF_NOWAIT), as
// READs served in the connection's reader read — returns other bytes
// than rec's.
func cacheReadsStale(fd int, rec *statev1.StorageProbeRecord) (bool, error) {
	got, err := sendfileBack(fd, int(rec.Size))
	if err != nil {
		return false, fmt.Errorf("sendfile of the other node's probe file: %w", err)
	}
	if !sameBytes(got, rec) {
		return true, nil
	}
	buf := make([]byte, rec.Size)
	n, err := unix.Preadv2(fd, [][]byte{buf}, 0, unix.RWF_NOWAIT)
	if err == nil && n == len(buf) && !sameBytes(buf, rec) {
		return true, nil
	}
	return false, nil
}

// sendfileBack sends n bytes of fd through a socketpair and reads them
// back.
func sendfileBack(fd, n int) ([]byte, error) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])
	unix.SetsockoptInt(sp[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4*maxProbe)
	unix.SetsockoptInt(sp[1], unix.SOL_SOCKET, unix.SO_RCVBUF, 4*maxProbe)
	var off int64
	for off < int64(n) {
		m, err := unix.Sendfile(sp[0], fd, &off, n-int(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break // the file is shorter here
		}
	}
	unix.Shutdown(sp[0], unix.SHUT_WR)
	out := make([]byte, 0, n)
	buf := make([]byte, 16384)
	for {
		m, err := unix.Read(sp[1], buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return out, nil
		}
		out = append(out, buf[:m]...)
	}
}

// preadAll reads up to max bytes of fd from offset 0.
func preadAll(fd, max int) ([]byte, error) {
	buf := make([]byte, max)
	off := 0
	for off < max {
		n, err := unix.Pread(fd, buf[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		off += n
	}
	return buf[:off], nil
}

func sameBytes(p []byte, rec *statev1.StorageProbeRecord) bool {
	sum := sha256.Sum256(p)
	return int64(len(p)) == rec.Size && bytes.Equal(sum[:], rec.Sha256)
}

// isIncoherent reports whether err is a check's finding rather than a
// failure to check.
func isIncoherent(err error) bool {
	var e *errIncoherent
	return errors.As(err, &e)
}
