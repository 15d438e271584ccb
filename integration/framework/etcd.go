package framework

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdBinary is the etcd a cluster test runs as a process of its own
// (Debian's etcd-server package; CI installs it, see .ci/run).
const EtcdBinary = "/usr/bin/etcd"

// EtcdProcess is a single-member etcd in a process of its own, so that a
// test can stop it as a hung etcd (SIGSTOP: its connections stay open and
// nothing answers) and let it go on (SIGCONT).
type EtcdProcess struct {
	Endpoints []string
	cmd       *exec.Cmd
	out       *logBuffer
	exited    chan struct{}
}

// StartEtcdProcess starts EtcdBinary with its data under dir on free
// loopback ports and waits until it answers. It is killed when the test
// ends. The test is skipped when etcd is not installed.
func StartEtcdProcess(t testing.TB, dir string) *EtcdProcess {
	t.Helper()
	if _, err := exec.LookPath(EtcdBinary); err != nil {
		t.Skipf("%s is not installed (CI installs etcd-server; see .ci/run)", EtcdBinary)
	}
	client := "http://" + FreeAddr(t, "127.0.0.1")
	peer := "http://" + FreeAddr(t, "127.0.0.1")
	e := &EtcdProcess{Endpoints: []string{client}, out: &logBuffer{}, exited: make(chan struct{})}
	e.cmd = exec.Command(EtcdBinary, "--name", "test", "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test="+peer, "--log-level", "warn", "--logger", "zap")
	e.cmd.Stdout, e.cmd.Stderr = e.out, e.out
	e.cmd.SysProcAttr = OwnGroup()
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", EtcdBinary, err)
	}
	go func() {
		e.cmd.Wait()
		close(e.exited)
	}()
	t.Cleanup(func() {
		e.cmd.Process.Signal(syscall.SIGCONT)
		e.cmd.Process.Kill()
		<-e.exited
		if t.Failed() {
			t.Logf("etcd log:\n%s", e.out.String())
		}
	})
	if err := e.waitReady(StartDeadline); err != nil {
		t.Fatalf("etcd %s: %v\n%s", client, err, e.out.String())
	}
	return e
}

// waitReady waits until etcd answers a read.
func (e *EtcdProcess) waitReady(deadline time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: deadline})
	if err != nil {
		return err
	}
	defer cli.Close()
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Get(cctx, "/ready")
		ccancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-e.exited:
			return net.ErrClosed
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the etcd process (SIGSTOP).
func (e *EtcdProcess) Stop(t testing.TB) {
	t.Helper()
	if err := e.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Continue lets a stopped etcd process go on (SIGCONT).
func (e *EtcdProcess) Continue(t testing.TB) {
	t.Helper()
	if err := e.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Log returns what etcd has written so far.
func (e *EtcdProcess) Log() string { return strings.TrimSpace(e.out.String()) }
