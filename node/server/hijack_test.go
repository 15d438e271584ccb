package server_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// handoffPeers hands every binding to carrier.
type handoffPeers struct{ carrier server.Carrier }

func (p handoffPeers) Handoff(context.Context, uint64, *server.HandoffState) (server.Carrier, error) {
	return p.carrier, nil
}

func (handoffPeers) RelaySession(context.Context, uint64, *server.HandoffState) (server.SessionRelay, error) {
	return nil, server.ErrNoSession
}
func (handoffPeers) EndPrevious(context.Context, uint64, string, uint64) {}
func (handoffPeers) SendLeaseBreak(context.Context, [16]byte, time.Time, *smb2.LeaseBreakNotification) bool {
	return false
}

// carrierFunc is a Carrier made of a function.
type carrierFunc func(h *server.Hijacked) error

func (f carrierFunc) Carry(h *server.Hijacked) error { return f(h) }

// bindingFrame is a binding SESSION_SETUP of session sid, as c would send
// it, with its NetBIOS header.
func bindingFrame(c *servertest.Conn, sid uint64) []byte {
	h := c.Header(smb2.CmdSessionSetup)
	h.SessionID = sid
	req := &smb2.SessionSetupRequest{Flags: smb2.SessionFlagBinding, SecurityMode: 1, SecurityBuffer: []byte("token")}
	msg := make([]byte, smb2.HeaderSize+req.Size())
	h.Encode(msg)
	req.Encode(msg[smb2.HeaderSize:])
	frame := make([]byte, 4+len(msg))
	smb2.PutTransportHeader(frame, len(msg))
	copy(frame[4:], msg)
	return frame
}

// TestHandoffHijacksConnection: a binding to a session another node holds
// gives the connection up to the Carrier SessionPeers.Handoff returns —
// the binding request first, then what the client sent after it (read
// ahead by the engine or not), a writer of whole frames whose Sendfile
// sends a file's bytes after a header — and the engine closes the
// connection when Carry returns.
func TestHandoffHijacksConnection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	content := bytes.Repeat([]byte("sent from the file "), 1000)
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	type carried struct {
		first, next []byte
		ctxLive     bool
		err         error
	}
	got := make(chan carried, 1)
	carry := func(h *server.Hijacked) error {
		var c carried
		c.first = h.First
		c.ctxLive = h.Context().Err() == nil
		var nb [4]byte
		if c.err = h.Reader.ReadFull(nb[:]); c.err == nil {
			_, n := smb2.ParseTransportHeader(nb[:])
			c.next = make([]byte, n)
			c.err = h.Reader.ReadFull(c.next)
		}
		f, err := os.Open(file)
		if err != nil {
			c.err = errors.Join(c.err, err)
		} else {
			defer f.Close()
			head := make([]byte, 4, 4+5)
			head = append(head, "head:"...)
			smb2.PutTransportHeader(head, 5+len(content))
			h.Writer.Lock()
			if h.Writer.CanSendfile() {
				err = h.Writer.Sendfile(head, f.Fd(), 0, len(content))
			} else {
				err = h.Writer.Write(append(head, content...))
			}
			h.Writer.Unlock()
			c.err = errors.Join(c.err, err)
		}
		got <- c
		// The client ends the connection: its next read fails.
		if err := h.Reader.ReadFull(nb[:1]); err == nil {
			return errors.New("read after the client closed")
		}
		return nil
	}
	srv := servertest.Start(t, servertest.Options{Configure: func(c *server.Config) {
		c.SessionPeers = handoffPeers{carrierFunc(carry)}
	}})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	bind := bindingFrame(c, 0x77)
	next := []byte{0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'}
	if err := c.SendRaw(append(bind, next...)); err != nil { // one write: the engine reads both
		t.Fatal(err)
	}
	msg, err := c.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("head:"), content...); !bytes.Equal(msg, want) {
		t.Errorf("the carrier's frame: %d bytes, want %d", len(msg), len(want))
	}
	var cr carried
	select {
	case cr = <-got:
	case <-time.After(servertest.DefaultTimeout):
		t.Fatal("Carry was not called")
	}
	if cr.err != nil {
		t.Fatal(cr.err)
	}
	if !bytes.Equal(cr.first, bind) {
		t.Errorf("First: %x, want the binding request %x", cr.first, bind)
	}
	if !bytes.Equal(cr.next, next[4:]) {
		t.Errorf("read after First: %q, want %q", cr.next, next[4:])
	}
	if !cr.ctxLive {
		t.Error("the connection's context was done during Carry")
	}
	c.Close()
}

// TestCarrierEndsConnection: the engine closes the connection when Carry
// returns; Close during Carry closes it and cancels its Context at once.
func TestCarrierEndsConnection(t *testing.T) {
	for _, closes := range []bool{false, true} {
		cancelled := make(chan bool, 1)
		srv := servertest.Start(t, servertest.Options{Configure: func(c *server.Config) {
			c.SessionPeers = handoffPeers{carrierFunc(func(h *server.Hijacked) error {
				if closes {
					h.Close()
				}
				cancelled <- h.Context().Err() != nil
				return nil
			})}
		}})
		c := servertest.Dial(t, srv.Addr)
		if err := c.Negotiate(smb2.Dialect311); err != nil {
			t.Fatal(err)
		}
		if err := c.SendRaw(bindingFrame(c, 0x78)); err != nil {
			t.Fatal(err)
		}
		if got := <-cancelled; got != closes {
			t.Errorf("Close called: %v; the context done during Carry: %v", closes, got)
		}
		if _, err := c.ReadFrame(); err == nil {
			t.Errorf("Close called: %v; the client read a frame after Carry returned", closes)
		}
	}
}
