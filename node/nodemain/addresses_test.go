package nodemain

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
)

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within 10s", what)
		case <-tick.C:
		}
	}
}

func dials(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// freeLoopback is a free port on 127.0.0.x.
func freeLoopback(t *testing.T, host string) string {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestPublicAddrsServeStop: a public address served is listened on, with
// the hook run before ("add IP IFACE"); stopped, the listener closes, the
// connection made to it ends and the hook runs again ("del"), after.
// An address fenced is not served again under the fenced epoch.
func TestPublicAddrsServeStop(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "hook.log")
	hook := filepath.Join(dir, "hook")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"$@\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{})
	p := newPublicAddrs(srv, hook, "lo", slog.New(slog.DiscardHandler))
	addr := freeLoopback(t, "127.0.0.7")
	p.Serve(addr, 1)
	waitFor(t, "listening on "+addr, func() bool { return dials(addr) })
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p.Stop(addr)
	if dials(addr) {
		t.Errorf("%s still accepts connections after Stop", addr)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Error("the connection made to the address was not ended")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("the connection made to the address was not ended")
	}
	b, _ := os.ReadFile(log)
	if got, want := strings.TrimSpace(string(b)), "add 127.0.0.7 lo\ndel 127.0.0.7 lo"; got != want {
		t.Errorf("hook calls:\n%s\nwant:\n%s", got, want)
	}

	p.Serve(addr, 2)
	waitFor(t, "listening again under epoch 2", func() bool { return dials(addr) })
	p.Fenced(2)
	if dials(addr) {
		t.Errorf("%s still accepts connections after Fenced", addr)
	}
	p.Serve(addr, 2) // the agent's loop, a moment late
	p.mu.Lock()
	n := len(p.held)
	p.mu.Unlock()
	if n != 0 {
		t.Errorf("an address of a fenced epoch is served again")
	}
}

// TestPublicAddrsRetryBind: an address another socket still holds is
// listened on as soon as that one closes.
func TestPublicAddrsRetryBind(t *testing.T) {
	addr := freeLoopback(t, "127.0.0.8")
	old, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := newPublicAddrs(server.New(server.Config{}), "", "", slog.New(slog.DiscardHandler))
	p.Serve(addr, 1)
	defer p.Stop(addr)
	old.Close()
	waitFor(t, "listening once the old socket closed", func() bool { return dials(addr) })
}
