package smbc

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
)

// cutter forwards one client connection to addr and, once armed, closes
// it in place of forwarding the client's next bytes: a request in flight
// when the server's end goes away.
type cutter struct {
	ln    net.Listener
	armed atomic.Bool
}

func startCutter(t *testing.T, addr string) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &cutter{ln: ln}
	go func() {
		cn, err := ln.Accept()
		if err != nil {
			return
		}
		defer cn.Close()
		sn, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer sn.Close()
		go io.Copy(cn, sn)
		buf := make([]byte, 64<<10)
		for {
			n, err := cn.Read(buf)
			if err != nil || c.armed.Load() {
				return // the deferred closes cut both ends
			}
			if _, err := sn.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	return c
}

// TestReadCutOffIsNotEndOfFile: a READ whose connection ends before its
// answer fails with ErrConnectionLost, never io.EOF, which ReadAt keeps
// for a file's end — the robustness suite read such a READ through a
// fencing node as an empty register (docs/ROBUSTNESS.md, issue 3).
func TestReadCutOffIsNotEndOfFile(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	cut := startCutter(t, srv.Addr)
	o := Options{}
	o.Addr, o.User, o.Password, o.Share = cut.ln.Addr().String(), servertest.Alice, servertest.AlicePassword, servertest.ShareName
	c, err := Dial(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.shutdown() })
	f, err := c.OpenFile("value", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("c00-000040145"), 0); err != nil {
		t.Fatal(err)
	}
	cut.armed.Store(true)
	n, err := f.ReadAt(make([]byte, 13), 0)
	if n != 0 || errors.Is(err, io.EOF) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("READ cut off: %d bytes, %v; want 0 and ErrConnectionLost, not io.EOF", n, err)
	}
	if _, err := f.ReadAt(make([]byte, 13), 0); errors.Is(err, io.EOF) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("READ after the loss: %v; want ErrConnectionLost", err)
	}
}
