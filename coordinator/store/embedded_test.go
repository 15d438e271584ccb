package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// probeEnv names the etcd endpoint a re-executed test binary writes
// probeKey to (see TestMain), as whichever user it runs as.
const (
	probeEnv = "SMBCLUSTER_ETCD_PROBE"
	probeKey = "/smbcluster-probe"
)

func TestMain(m *testing.M) {
	if ep := os.Getenv(probeEnv); ep != "" {
		os.Exit(probe(ep))
	}
	os.Exit(m.Run())
}

// probe writes probeKey through endpoint; 0 if it could.
func probe(endpoint string) int {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 3 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, probeKey, strconv.Itoa(os.Getuid())); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	return 0
}

// TestEmbeddedOnlyForItsUser: the embedded etcd of a development cluster
// serves the user who started it, and no other local user, even when the
// directory around its data is open to everyone (as a checkout in a home
// directory usually is): `nobody` can neither connect nor write.
func TestEmbeddedOnlyForItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot run a client as another user")
	}
	nobody := nobodyCredential(t)
	pub, err := os.MkdirTemp("", "store-embedded-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pub, "probe")
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	endpoints, stop, err := StartEmbedded(filepath.Join(pub, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	if out, code := runProbe(t, nil, pub, bin, endpoints[0]); code != 0 {
		t.Fatalf("the starting user's client cannot write: exit %d\n%s", code, out)
	}
	out, code := runProbe(t, nobody, pub, bin, endpoints[0])
	if code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("nobody's etcd client at %s: exit %d, want a failure to connect (permission denied)\n%s", endpoints[0], code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, probeKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "0" {
		t.Errorf("%s = %q, want 0 (the starting user's write only)", probeKey, resp.Kvs)
	}
}

// runProbe runs the test binary as cred (nil: this user) to write probeKey.
func runProbe(t *testing.T, cred *syscall.Credential, dir, bin, endpoint string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), probeEnv+"="+endpoint)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

func nobodyCredential(t *testing.T) *syscall.Credential {
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
}

// TestEmbeddedLongPath: a data directory too deep for a socket path
// still starts, with its sockets in a private directory removed on stop.
func TestEmbeddedLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	endpoints, stop, err := StartEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	sockets := filepath.Dir(strings.TrimPrefix(endpoints[0], "unix://"))
	if !strings.HasPrefix(endpoints[0], "unix:///") || strings.HasPrefix(sockets, dir) {
		t.Errorf("endpoint %s: want a unix socket outside %s", endpoints[0], dir)
	}
	if fi, err := os.Stat(sockets); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %s: %v, %v; want mode 0700", sockets, fi.Mode(), err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, probeKey, "x")
	cli.Close()
	stop()
	if err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(sockets); !os.IsNotExist(err) {
		t.Errorf("socket directory %s after stop: %v", sockets, err)
	}
}

// TestEmbeddedRefusesOthersDir: a data directory of another user is
// refused, since that user could reach the sockets in it.
func TestEmbeddedRefusesOthersDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot give a directory to another user")
	}
	nobody := nobodyCredential(t)
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(nobody.Uid), int(nobody.Gid)); err != nil {
		t.Fatal(err)
	}
	_, stop, err := StartEmbedded(dir)
	if err == nil {
		stop()
		t.Fatalf("StartEmbedded(%s) owned by nobody: no error", dir)
	}
	if !strings.Contains(err.Error(), "belongs to another user") {
		t.Errorf("StartEmbedded(%s) owned by nobody: %v", dir, err)
	}
}
