package smbc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	"github.com/smbcluster/smbcluster/node/sockio"
)

// oplockBreakID is the MessageId of unsolicited OPLOCK_BREAK notifications,
// which go to Conn.Breaks.
const oplockBreakID = ^uint64(0)

// receiver is the state of the goroutine that reads responses.
type receiver struct {
	c     *Conn
	nb    [smb2.TransportHeaderSize]byte
	hdr   [smb2.HeaderSize]byte
	fixed [smb2.ReadResponseFixedSize]byte
	pad   []byte // bytes between a READ's fixed part and its data
	trail []byte // bytes after a READ's data
	raw   []byte // an encrypted message
	brk   []byte // a break notification
	plain []byte // its plaintext
	parts [][]byte
}

func (c *Conn) recvLoop() {
	defer close(c.recvDone)
	for {
		if err := c.recv.one(); err != nil {
			c.fail(lost(err))
			return
		}
	}
}

// lost is the error of a connection whose socket failed with err:
// ErrConnectionLost, naming err without wrapping it, so that an io.EOF
// from the socket is not taken for a file's end (File.ReadAt).
func lost(err error) error {
	if errors.Is(err, ErrConnectionLost) || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrConnectionLost, err)
}

// one reads one message.
func (r *receiver) one() error {
	c := r.c
	if err := c.br.ReadFull(r.nb[:]); err != nil {
		return err
	}
	// The transport's length is 24 bits; 16 MiB covers the largest READ
	// this client asks for (maxIO) with its headers.
	typ, size := smb2.ParseTransportHeader(r.nb[:])
	if typ != 0 || size < 4 || size > 16<<20 {
		return fmt.Errorf("%w: transport frame of type %#x, %d bytes", ErrProtocol, typ, size)
	}
	c.br.SetBulk(size >= sockio.BulkMin)
	proto, err := c.br.Peek(4)
	if err != nil {
		return err
	}
	switch binary.LittleEndian.Uint32(proto) {
	case smb2.ProtocolID:
		return r.stream(size)
	case smb2.TransformProtocolID:
		return r.decrypt(size)
	}
	return fmt.Errorf("%w: protocol id %x", ErrProtocol, proto)
}

// lookup finds the call a response answers and settles its credits. A
// final response takes the call out of the table; the receiver then owns
// it until it signals done.
func (r *receiver) lookup(h *smb2.Header) (cl *call, interim bool, err error) {
	c := r.c
	interim = h.IsAsync() && smb2.Status(h.Status) == smb2.StatusPending
	c.mu.Lock()
	defer c.mu.Unlock()
	cl = c.calls[h.MessageID]
	if cl == nil {
		return nil, false, fmt.Errorf("%w: response to unknown message id %d", ErrProtocol, h.MessageID)
	}
	c.avail += uint64(h.Credits)
	if !interim {
		delete(c.calls, h.MessageID)
		c.inflight -= uint64(max(cl.charge, 1))
	}
	if h.Credits > 0 {
		c.cond.Broadcast()
	}
	return cl, interim, nil
}

// stream handles an unencrypted message read from the socket: a READ's
// data goes straight to the caller's buffer, anything else into the call.
func (r *receiver) stream(size int) error {
	c := r.c
	if size < smb2.HeaderSize {
		return fmt.Errorf("%w: %d-byte message", ErrProtocol, size)
	}
	if err := c.br.ReadFull(r.hdr[:]); err != nil {
		return err
	}
	var h smb2.Header
	if err := h.Decode(r.hdr[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if h.NextCommand != 0 {
		return fmt.Errorf("%w: compound response to a lone request", ErrProtocol)
	}
	rest := size - smb2.HeaderSize
	if h.MessageID == oplockBreakID {
		r.brk = grow(r.brk, size)
		copy(r.brk, r.hdr[:])
		if err := c.br.ReadFull(r.brk[smb2.HeaderSize:]); err != nil {
			return err
		}
		return c.notify(r.brk)
	}
	cl, interim, err := r.lookup(&h)
	if err != nil {
		return err
	}
	if interim {
		return c.br.Discard(rest)
	}
	if err := r.streamBody(cl, &h, rest); err != nil {
		r.complete(cl, &h, err)
		return err
	}
	r.complete(cl, &h, nil)
	return nil
}

func (r *receiver) streamBody(cl *call, h *smb2.Header, rest int) error {
	c := r.c
	if c.encrypt && h.Command != smb2.CmdSessionSetup && h.Command != smb2.CmdNegotiate {
		return fmt.Errorf("%w: %v", ErrUnencrypted, h.Command)
	}
	if cl.dst != nil && h.Command == smb2.CmdRead && smb2.Status(h.Status) == smb2.StatusSuccess {
		return r.readData(cl, h, rest)
	}
	cl.resp = grow(cl.resp, smb2.HeaderSize+rest)
	copy(cl.resp, r.hdr[:])
	if err := c.br.ReadFull(cl.resp[smb2.HeaderSize:]); err != nil {
		return err
	}
	r.parts = append(r.parts[:0], cl.resp)
	return r.verify(h)
}

// readData receives a READ response's data into cl.dst.
func (r *receiver) readData(cl *call, h *smb2.Header, rest int) error {
	c := r.c
	if rest < len(r.fixed) {
		return fmt.Errorf("%w: READ response of %d bytes", ErrProtocol, rest)
	}
	if err := c.br.ReadFull(r.fixed[:]); err != nil {
		return err
	}
	off, n := int(r.fixed[2]), int(binary.LittleEndian.Uint32(r.fixed[4:]))
	if n == 0 {
		off = smb2.ReadResponseDataOffset
	}
	pad := off - smb2.ReadResponseDataOffset
	trail := rest - len(r.fixed) - pad - n
	if binary.LittleEndian.Uint16(r.fixed[:]) != 17 || pad < 0 || n > len(cl.dst) || trail < 0 {
		return fmt.Errorf("%w: READ response with %d bytes at offset %d in %d", ErrProtocol, n, off, rest+smb2.HeaderSize)
	}
	r.pad = grow(r.pad, pad)
	r.trail = grow(r.trail, trail)
	for _, b := range [...][]byte{r.pad, cl.dst[:n], r.trail} {
		if err := c.br.ReadFull(b); err != nil {
			return err
		}
	}
	cl.n = n
	r.parts = append(r.parts[:0], r.hdr[:], r.fixed[:], r.pad, cl.dst[:n], r.trail)
	return r.verify(h)
}

// verify checks the signature of an unencrypted response, whose parts are
// in r.parts. SESSION_SETUP responses are checked by
// the logon itself, interim responses are not signed.
func (r *receiver) verify(h *smb2.Header) error {
	c := r.c
	if h.Command == smb2.CmdNegotiate || h.Command == smb2.CmdSessionSetup || c.signer == nil {
		return nil
	}
	if h.Flags&smb2.FlagSigned == 0 {
		if c.sign {
			return fmt.Errorf("%w: %v", ErrUnsigned, h.Command)
		}
		return nil
	}
	if !c.signer.Verify(r.parts...) {
		return fmt.Errorf("%w: %v", ErrBadSignature, h.Command)
	}
	return nil
}

// decrypt handles an encrypted message: it is read whole, opened, and its
// PDUs delivered from memory.
func (r *receiver) decrypt(size int) error {
	c := r.c
	r.raw = grow(r.raw, size)
	if err := c.br.ReadFull(r.raw); err != nil {
		return err
	}
	if c.dec == nil {
		return fmt.Errorf("%w: encrypted message before the session has keys", ErrProtocol)
	}
	if sid, err := signing.ParseTransformHeader(r.raw); err != nil || sid != c.sessionID {
		return fmt.Errorf("%w: transform header (session %#x): %v", ErrProtocol, sid, err)
	}
	if cap(r.plain) < size+c.dec.Overhead() {
		r.plain = make([]byte, 0, size+c.dec.Overhead())
	}
	plain, err := signing.Open(r.plain[:0], c.dec, r.raw)
	if err != nil {
		return err
	}
	for len(plain) > 0 {
		var h smb2.Header
		if err := h.Decode(plain); err != nil {
			return fmt.Errorf("%w: %v", ErrProtocol, err)
		}
		pdu := plain
		if h.NextCommand != 0 {
			if int(h.NextCommand) > len(plain) || h.NextCommand < smb2.HeaderSize {
				return fmt.Errorf("%w: NextCommand %d", ErrProtocol, h.NextCommand)
			}
			pdu = plain[:h.NextCommand]
		}
		plain = plain[len(pdu):]
		if h.MessageID == oplockBreakID {
			if err := c.notify(pdu); err != nil {
				return err
			}
			continue
		}
		cl, interim, err := r.lookup(&h)
		if err != nil {
			return err
		}
		if interim {
			continue
		}
		err = r.deliver(cl, &h, pdu)
		r.complete(cl, &h, err)
		if err != nil {
			return err
		}
	}
	return nil
}

// deliver hands a decrypted PDU to its call.
func (r *receiver) deliver(cl *call, h *smb2.Header, pdu []byte) error {
	if cl.dst != nil && h.Command == smb2.CmdRead && smb2.Status(h.Status) == smb2.StatusSuccess {
		var rr smb2.ReadResponse
		if err := rr.Decode(pdu); err != nil || len(rr.Data) > len(cl.dst) {
			return fmt.Errorf("%w: READ response", ErrProtocol)
		}
		cl.n = copy(cl.dst, rr.Data)
		return nil
	}
	cl.resp = append(cl.resp[:0], pdu...)
	return nil
}

// complete records a call's outcome and wakes its goroutine.
func (r *receiver) complete(cl *call, h *smb2.Header, err error) {
	cl.rh = *h
	st := smb2.Status(h.Status)
	switch {
	case err != nil:
		cl.err = err
	case st == smb2.StatusSuccess, st == smb2.StatusMoreProcessingRequired && cl.okMore:
	default:
		cl.err = &StatusError{Command: h.Command, Status: st}
	}
	cl.done <- struct{}{}
}

// grow returns b resliced to n bytes, reallocated if too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
