package framework

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestCephFS starts a throw-away Ceph cluster and mounts its filesystem
// twice with ceph-fuse, each mount in a mount namespace of its own (as two
// nodes on two hosts would), and checks what the cluster relies on:
// with the coherent options a write through mount A is read back through
// mount B at once — bytes and size, through pread, a fresh open and
// sendfile — and a create, rename and delete through A are seen through B
// at once; a file has the same inode number through both mounts and a
// different st_dev. With the client's defaults, and with the object cache
// off alone, it records how often B reads stale data.
func TestCephFS(t *testing.T) {
	c := StartCephFS(t, CephOptions{})
	per, sum := c.RSS()
	t.Logf("ceph cluster up in %v (mon %s); RSS %.0f MiB: %s", c.Startup.Round(time.Millisecond),
		c.MonAddr, float64(sum)/(1<<20), rssString(per))

	const rounds = 200
	t.Run("coherent", func(t *testing.T) {
		a, b := newCephMounts(t, c, true, nil)
		st := cephDataRounds(t, a, b, rounds)
		t.Logf("coherent options %v: %s", CephCoherentOptions, st)
		if st.any() {
			t.Errorf("stale reads through the second mount with %v: %s", CephCoherentOptions, st)
		}
		m := cephMetaRounds(t, a, b, 50)
		t.Logf("coherent options, metadata: %s", m)
		if m.any() {
			t.Errorf("stale metadata through the second mount with %v: %s", CephCoherentOptions, m)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		a, b := newCephMounts(t, c, false, nil)
		st := cephDataRounds(t, a, b, rounds)
		t.Logf("client defaults: %s", st)
		m := cephMetaRounds(t, a, b, 50)
		t.Logf("client defaults, metadata: %s", m)
	})
	t.Run("client_oc=false", func(t *testing.T) {
		// The Ceph client's object cache off, the kernel's page cache on: as
		// stale as the defaults (the page cache is what serves old bytes).
		a, b := newCephMounts(t, c, false, []string{"--client_oc=false"})
		st := cephDataRounds(t, a, b, rounds)
		t.Logf("--client_oc=false alone: %s", st)
	})
	per, sum = c.RSS()
	t.Logf("ceph cluster RSS after the runs %.0f MiB: %s", float64(sum)/(1<<20), rssString(per))
}

func rssString(per map[string]int64) string {
	var s string
	for _, name := range sortedKeysInt(per) {
		s += fmt.Sprintf("%s %.0f MiB ", name, float64(per[name])/(1<<20))
	}
	return s
}

func sortedKeysInt(m map[string]int64) []string {
	s := make(map[string]string, len(m))
	for k := range m {
		s[k] = ""
	}
	return sortedKeys(s)
}

// mountNS is a mount namespace of its own (unshare -m, private
// propagation), held by a process that lives until the test ends. Its
// files are reached from the test through /proc/PID/root.
type mountNS struct {
	pid  int
	root string // /proc/PID/root
}

func newMountNS(t *testing.T) *mountNS {
	t.Helper()
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = OwnGroup()
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	ns := &mountNS{pid: cmd.Process.Pid, root: fmt.Sprintf("/proc/%d/root", cmd.Process.Pid)}
	self, _ := os.Readlink("/proc/self/ns/mnt")
	WaitFor(t, 10*time.Second, "unshare in a mount namespace of its own", func() bool {
		other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", ns.pid))
		return err == nil && other != self
	})
	return ns
}

// mount runs argv (a MountCommand) in the namespace and returns the
// mount point as the test reaches it.
func (ns *mountNS) mount(t *testing.T, dir string, argv []string) string {
	t.Helper()
	args := append([]string{"--target", strconv.Itoa(ns.pid), "--mount", "--"}, argv...)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter %v: %v\n%s", argv, err, out)
	}
	p := filepath.Join(ns.root, dir)
	var parent, mnt syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(p), &parent); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(p, &mnt); err != nil {
		t.Fatalf("mount point %s: %v", p, err)
	}
	if mnt.Dev == parent.Dev {
		t.Fatalf("%v exited 0 but %s is not a mount point in its namespace", argv, dir)
	}
	return p
}

// newCephMounts mounts c's filesystem twice, each in a mount namespace of
// its own, and returns a fresh directory of the filesystem as each mount
// reaches it.
func newCephMounts(t *testing.T, c *CephFS, coherent bool, extra []string) (a, b string) {
	t.Helper()
	var roots [2]string
	for i := range roots {
		dir := filepath.Join(t.TempDir(), "mnt")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		argv := c.MountCommand(dir, coherent)
		if len(extra) > 0 {
			argv = append(append(argv[:len(argv)-1:len(argv)-1], extra...), dir)
		}
		roots[i] = newMountNS(t).mount(t, dir, argv)
	}
	sub := filepath.Base(t.Name())
	if err := os.Mkdir(filepath.Join(roots[0], sub), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(roots[0], sub), filepath.Join(roots[1], sub)
}

// staleCounts counts rounds in which the second mount did not see the
// first one's write.
type staleCounts struct {
	rounds                  int
	size, mtime             int // fstat of the open file
	pread, reopen, sendfile int
	// a second file B holds no descriptor of, read by a fresh open and stat
	cold, coldSize int
	// rounds that kept the size, and of those the ones stale by pread
	sameSize, staleSameSize int
}

func (s staleCounts) any() bool {
	return s.size+s.mtime+s.pread+s.reopen+s.sendfile+s.cold+s.coldSize > 0
}

func (s staleCounts) String() string {
	return fmt.Sprintf("%d rounds: stale size %d, mtime %d, pread %d, read after reopen %d, sendfile %d (pread stale in %d of the %d rounds that kept the size); file not open in B: bytes %d, size %d",
		s.rounds, s.size, s.mtime, s.pread, s.reopen, s.sendfile, s.staleSameSize, s.sameSize, s.cold, s.coldSize)
}

// cephDataRounds writes a file through a (an open descriptor, as a node
// holds) and reads it back through b at once: fstat and pread on a
// descriptor opened before the rounds, pread on a fresh descriptor, and
// sendfile into a socket (how our node sends READs). Sizes go in pairs:
// every other write leaves the size as it was, which is when a page cache
// keeps the old bytes. A second file, written through a descriptor A
// keeps open, B only opens afresh and stats: the reader is not known to
// the MDS when the writer writes (the writer may buffer).
func cephDataRounds(t *testing.T, a, b string, rounds int) staleCounts {
	t.Helper()
	fa, err := os.OpenFile(filepath.Join(a, "data"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fa2, err := os.OpenFile(filepath.Join(a, "cold"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fa2.Close()
	if _, err := fa.WriteAt(bytes.Repeat([]byte{0}, 8192), 0); err != nil {
		t.Fatal(err)
	}
	fb, err := os.Open(filepath.Join(b, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	buf := make([]byte, 1<<16)
	if _, err := fb.ReadAt(buf, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	st := staleCounts{rounds: rounds}
	size := 8192
	for i := range rounds {
		next := 8192 + (i/2%2)*1000
		data := bytes.Repeat([]byte(fmt.Sprintf("%07d.", i)), next/8+1)[:next]
		if _, err := fa.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if next < size {
			if err := fa.Truncate(int64(next)); err != nil {
				t.Fatal(err)
			}
		}
		same := next == size
		if same {
			st.sameSize++
		}
		size = next
		ai, err := fa.Stat()
		if err != nil {
			t.Fatal(err)
		}
		bi, err := fb.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if bi.Size() != int64(size) {
			st.size++
		}
		if !bi.ModTime().Equal(ai.ModTime()) {
			st.mtime++
		}
		if n, err := fb.ReadAt(buf, 0); (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], data) {
			st.pread++
			if same {
				st.staleSameSize++
			}
		}
		if got := readFresh(t, filepath.Join(b, "data"), buf); !bytes.Equal(got, data) {
			st.reopen++
		}
		if got := sendfileAll(t, fb, len(data)+100); !bytes.Equal(got, data) {
			st.sendfile++
		}
		// The second file: A writes (it grows every other round), B stats
		// it and reads it through a descriptor of its own.
		cold := data[:len(data)/2+i%2]
		if _, err := fa2.WriteAt(cold, 0); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(b, "cold")); err != nil || fi.Size() < int64(len(cold)) {
			st.coldSize++
		}
		if got := readFresh(t, filepath.Join(b, "cold"), buf); len(got) < len(cold) || !bytes.Equal(got[:len(cold)], cold) {
			st.cold++
		}
	}
	return st
}

func readFresh(t *testing.T, path string, buf []byte) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf[:n]
}

// sendfileAll sends up to max bytes of f from offset 0 into one end of a
// socket pair with sendfile(2) and returns what the other end received.
func sendfileAll(t *testing.T, f *os.File, max int) []byte {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, r := os.NewFile(uintptr(fds[0]), "sendfile-w"), os.NewFile(uintptr(fds[1]), "sendfile-r")
	defer r.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	var off int64
	for off < int64(max) {
		n, err := syscall.Sendfile(int(w.Fd()), int(f.Fd()), &off, max-int(off))
		if err != nil {
			w.Close()
			t.Fatalf("sendfile: %v", err)
		}
		if n == 0 {
			break
		}
	}
	w.Close()
	return <-got
}

// metaCounts counts rounds in which the second mount did not see the
// first one's namespace change at once.
type metaCounts struct {
	rounds                                                         int
	create, size, ino, dev, list, renamedOld, renamedNew, unlinked int
}

func (m metaCounts) any() bool {
	return m.create+m.size+m.ino+m.dev+m.list+m.renamedOld+m.renamedNew+m.unlinked > 0
}

func (m metaCounts) String() string {
	return fmt.Sprintf("%d rounds: create unseen %d, size %d, inode differs %d, st_dev equal %d, not listed %d, old name after rename %d, new name unseen %d, name after delete %d",
		m.rounds, m.create, m.size, m.ino, m.dev, m.list, m.renamedOld, m.renamedNew, m.unlinked)
}

// cephMetaRounds creates, renames and deletes files through a after b
// has looked the names up (so b has cached them, also as missing), and
// checks each step through b at once.
func cephMetaRounds(t *testing.T, a, b string, rounds int) metaCounts {
	t.Helper()
	if err := os.Mkdir(filepath.Join(a, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := metaCounts{rounds: rounds}
	exists := func(p string) bool {
		_, err := os.Stat(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	listed := func(dir, name string) bool {
		names, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range names {
			if e.Name() == name {
				return true
			}
		}
		return false
	}
	for i := range rounds {
		x, y := fmt.Sprintf("x%d", i), fmt.Sprintf("y%d", i)
		ax, ay := filepath.Join(a, "meta", x), filepath.Join(a, "meta", y)
		bx, by := filepath.Join(b, "meta", x), filepath.Join(b, "meta", y)
		exists(bx)
		exists(by)
		listed(filepath.Join(b, "meta"), x)
		if err := os.WriteFile(ax, bytes.Repeat([]byte("m"), i+1), 0o644); err != nil {
			t.Fatal(err)
		}
		var sa, sb syscall.Stat_t
		if err := syscall.Stat(ax, &sa); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(bx, &sb); err != nil {
			m.create++
		} else {
			if sb.Size != int64(i+1) {
				m.size++
			}
			if sb.Ino != sa.Ino {
				m.ino++
			}
			if sb.Dev == sa.Dev {
				m.dev++
			}
		}
		if !listed(filepath.Join(b, "meta"), x) {
			m.list++
		}
		if err := os.Rename(ax, ay); err != nil {
			t.Fatal(err)
		}
		if exists(bx) {
			m.renamedOld++
		}
		if err := syscall.Stat(by, &sb); err != nil || sb.Ino != sa.Ino {
			m.renamedNew++
		}
		if err := os.Remove(ay); err != nil {
			t.Fatal(err)
		}
		if exists(by) {
			m.unlinked++
		}
	}
	return m
}
