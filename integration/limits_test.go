package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	smb2 "github.com/cloudsoda/go-smb2"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// statusTooManyOpenedFiles is STATUS_TOO_MANY_OPENED_FILES ([MS-ERREF]
// 2.3.1), Samba's answer past its "max open files".
const statusTooManyOpenedFiles = 0xC000011F

// TestOpenCaps runs smbnode with 256 descriptors. One session opening a
// file without closing it stops at --max-opens-per-session (100), a second
// at the node's default cap, half the descriptor limit (128), both with
// STATUS_TOO_MANY_OPENED_FILES; the node keeps descriptors for new
// clients, and smbclient is served. Without the caps the first session
// took every descriptor (244 opens), and the next connection killed the
// node.
func TestOpenCaps(t *testing.T) {
	n := framework.StartNode(t, framework.Options{NoFile: 256, Args: []string{"--max-opens-per-session", "100"}})
	if err := os.WriteFile(n.SharePath(shareNm)+"/f", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, firstErr := openUntilRefused(t, mountGoSMB2(t, n))
	if len(first) != 100 || !isStatus(firstErr, statusTooManyOpenedFiles) {
		t.Fatalf("first session: %d opens, then %v; want 100 and STATUS_TOO_MANY_OPENED_FILES", len(first), firstErr)
	}
	second, secondErr := openUntilRefused(t, mountGoSMB2(t, n))
	if len(second) != 28 || !isStatus(secondErr, statusTooManyOpenedFiles) {
		t.Fatalf("second session: %d opens, then %v; want 28 (node cap 128) and STATUS_TOO_MANY_OPENED_FILES", len(second), secondErr)
	}
	// At the cap, a new client still connects and logs on; its opens
	// fail until some are closed.
	r := framework.SMBClient{Node: n, User: user, Password: password()}.Script(t, "", shareNm, "ls")
	if !strings.Contains(r.Output(), "NT_STATUS_TOO_MANY_OPENED_FILES") {
		t.Fatalf("smbclient with the node at its open cap:\n%s", r)
	}
	for _, f := range first[:10] {
		f.Close()
	}
	smbclientServed(t, n, "with 118 opens held")
}

// TestDescriptorExhaustion runs smbnode with 256 descriptors: 300 idle
// connections exhaust them, and the node backs off on EMFILE instead of
// exiting (accept4: too many open files), then serves smbclient once they
// are gone.
func TestDescriptorExhaustion(t *testing.T) {
	n := framework.StartNode(t, framework.Options{NoFile: 256})
	if err := os.WriteFile(n.SharePath(shareNm)+"/f", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for range 300 {
		c, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	framework.WaitFor(t, 30*time.Second, "the node running out of descriptors", func() bool {
		return strings.Contains(n.Log(), "accept failed; retrying")
	})
	for _, c := range conns {
		c.Close()
	}
	smbclientServed(t, n, "after EMFILE")
}

// openUntilRefused opens f without closing until a CREATE fails; it returns
// the opens and the error. The opens are closed when the test ends.
func openUntilRefused(t *testing.T, fs *smb2.Share) ([]*smb2.File, error) {
	t.Helper()
	var files []*smb2.File
	t.Cleanup(func() {
		for _, f := range files {
			f.Close()
		}
	})
	for len(files) < 1000 {
		f, err := fs.Open("f")
		if err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}

func isStatus(err error, code uint32) bool {
	var re *smb2.ResponseError
	return errors.As(err, &re) && re.Code == code
}

// smbclientServed fails the test unless smbclient lists the share.
func smbclientServed(t *testing.T, n *framework.Node, when string) {
	t.Helper()
	r := framework.SMBClient{Node: n, User: user, Password: password()}.Script(t, "", shareNm, "ls")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, " f ") {
		t.Fatalf("smbclient %s:\n%s", when, r)
	}
}

// TestPreAuthMemoryBounded: 40 connections that announce 8 MiB frames
// before logging on, send 2 MiB of them and stall leave the node's
// resident memory within 16 MiB of what it was: frames before logon are
// bounded at 64 KiB and the connections are closed at their header.
// Before the bound the node held 8 MiB (a 16 MiB pooled buffer) for each.
func TestPreAuthMemoryBounded(t *testing.T) {
	n := framework.StartNode(t, framework.Options{})
	mountGoSMB2(t, n) // warm up: a session's worth of the heap
	before := vmRSS(t, n.Pid())
	var wg sync.WaitGroup
	closed := make(chan bool, 40)
	for range 40 {
		c, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			frame := make([]byte, 4+2<<20)
			binary.BigEndian.PutUint32(frame, 8<<20)
			copy(frame[4:], "\xfeSMB")
			c.SetDeadline(time.Now().Add(20 * time.Second))
			c.Write(frame) // fails once the node has closed the connection
			_, err := io.ReadFull(c, make([]byte, 1))
			var ne net.Error
			closed <- !(errors.As(err, &ne) && ne.Timeout())
		}()
	}
	wg.Wait()
	close(closed)
	for ok := range closed {
		if !ok {
			t.Error("a connection with an 8 MiB frame before logon stayed open")
			break
		}
	}
	after := vmRSS(t, n.Pid())
	t.Logf("smbnode VmRSS: %d KiB before, %d KiB after 40 stalled 8 MiB pre-logon frames", before>>10, after>>10)
	if after > before+16<<20 {
		t.Errorf("VmRSS grew by %d KiB, want at most 16 MiB", (after-before)>>10)
	}
}

// vmRSS is the resident set size of process pid, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/pid/status")
	return 0
}

// TestHandshakeTimeoutFlag: with --handshake-timeout 1s, connections that
// never log on are closed, while a session that logged on stays usable
// after idling longer than that (no --idle-timeout by default).
func TestHandshakeTimeoutFlag(t *testing.T) {
	n := framework.StartNode(t, framework.Options{Args: []string{"--handshake-timeout", "1s"}})
	fs := mountGoSMB2(t, n)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		c, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err := c.Read(make([]byte, 1))
			if err == io.EOF {
				err = nil
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("an idle connection that never logged on: %v, want closed by the node", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fs.WithContext(ctx).WriteFile("after-idle", []byte("x"), 0o644); err != nil {
		t.Fatalf("the logged-on session after idling past the handshake timeout: %v", err)
	}
}
