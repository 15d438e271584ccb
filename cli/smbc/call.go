package smbc

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// call is one request and, once done is signalled, its response. Calls are
// pooled: the measured path reuses their buffers.
type call struct {
	req     []byte    // transport header, SMB2 header and body, without payload
	payload []byte    // sent after req (WRITE data); not copied
	dst     []byte    // a READ's data goes here; not copied
	bufsArr [2][]byte // writev's parts, consumed by Writev
	charge  uint16
	okMore  bool           // STATUS_MORE_PROCESSING_REQUIRED is not an error
	signer  signing.Signer // if set, signs the request whatever the session says (binding)

	rh   smb2.Header
	resp []byte // the whole response PDU, unless its data went to dst
	n    int    // bytes of READ data placed in dst
	err  error
	done chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// body is what every smb2 request type implements.
type body interface {
	Size() int
	Encode([]byte)
}

// newCall builds a request for cmd with body b; the header's message id,
// credits, session and signature are filled in when it is sent.
func (c *Conn) newCall(cmd smb2.Command, b body) *call {
	cl, into := newRawCall(cmd, b.Size())
	b.Encode(into)
	return cl
}

// newRawCall takes a pooled call with a zeroed header for cmd and returns
// it with the n bytes its body goes into.
func newRawCall(cmd smb2.Command, n int) (*call, []byte) {
	cl := callPool.Get().(*call)
	cl.req = grow(cl.req, smb2.TransportHeaderSize+smb2.HeaderSize+n)
	clear(cl.req[:smb2.TransportHeaderSize+smb2.HeaderSize])
	binary.LittleEndian.PutUint16(cl.req[smb2.TransportHeaderSize+12:], uint16(cmd))
	return cl, cl.req[smb2.TransportHeaderSize+smb2.HeaderSize:]
}

// msg is the SMB2 message the call sent, without payload.
func (cl *call) msg() []byte { return cl.req[smb2.TransportHeaderSize:] }

// release returns the call to the pool.
func (cl *call) release() {
	cl.payload, cl.dst, cl.okMore, cl.signer = nil, nil, false, nil
	cl.resp, cl.err, cl.n = cl.resp[:0], nil, 0
	cl.bufsArr = [2][]byte{}
	callPool.Put(cl)
}

// creditCharge is the CreditCharge of a request moving n bytes ([MS-SMB2]
// 3.1.5.2); 2.0.2 and connections without multi-credit requests use 0.
func (c *Conn) creditCharge(n int) uint16 {
	if !c.largeMTU {
		return 0
	}
	return uint16(1 + (max(n, 1)-1)/65536)
}

// do sends cl and waits for its final response. The tree id is stamped
// after tree connect, the session id after the first SESSION_SETUP
// response. A status other than success is returned as a *StatusError,
// with the response kept in cl.
func (c *Conn) do(cl *call, charge uint16) error {
	if c.ctx != nil && context.Cause(c.ctx) != nil {
		// Ended: failed here, not only by the AfterFunc, which runs
		// in a goroutine of its own and may come after this request.
		c.fail(context.Cause(c.ctx))
	}
	cl.charge = charge
	need := uint64(max(charge, 1))
	c.mu.Lock()
	for c.err == nil && c.avail < need {
		c.cond.Wait()
	}
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.avail -= need
	c.inflight += need
	// Ask for the charge back plus part of any shortfall below the target
	// (at most 256 a request: chosen, so that concurrent requests do not
	// each ask for the whole shortfall).
	ask := need
	if held, target := c.avail+c.inflight, uint64(c.o.Credits); held < target {
		ask += min(target-held, 256)
	}
	c.mu.Unlock()

	c.wmu.Lock()
	h := cl.req[smb2.TransportHeaderSize : smb2.TransportHeaderSize+smb2.HeaderSize]
	id := c.nextID
	c.nextID += need
	binary.LittleEndian.PutUint32(h, smb2.ProtocolID)
	binary.LittleEndian.PutUint16(h[4:], smb2.HeaderSize)
	binary.LittleEndian.PutUint16(h[6:], charge)
	binary.LittleEndian.PutUint16(h[14:], uint16(ask))
	binary.LittleEndian.PutUint64(h[24:], id)
	binary.LittleEndian.PutUint32(h[36:], c.treeID)
	binary.LittleEndian.PutUint64(h[40:], c.sessionID)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.wmu.Unlock()
		return err
	}
	c.calls[id] = cl
	c.mu.Unlock()
	err := c.send(cl)
	c.wmu.Unlock()
	if err != nil {
		c.fail(lost(err))
	}
	<-cl.done
	return cl.err
}

// send writes cl's request, signed or sealed as the session requires.
// Called with wmu held.
func (c *Conn) send(cl *call) error {
	msg := cl.msg()
	cmd := smb2.Command(binary.LittleEndian.Uint16(msg[12:]))
	if c.encrypt && c.enc != nil {
		c.parts = append(c.parts[:0], msg, cl.payload)
		size := len(msg) + len(cl.payload)
		need := smb2.TransportHeaderSize + signing.TransformHeaderSize + size + c.enc.Overhead()
		if cap(c.wbuf) < need {
			c.wbuf = make([]byte, 0, need)
		}
		out := signing.Seal(c.wbuf[:smb2.TransportHeaderSize], c.enc, c.nonces, c.sessionID, c.parts...)
		smb2.PutTransportHeader(out, len(out)-smb2.TransportHeaderSize)
		return c.bw.Write(out)
	}
	// 3.1.1 signs TREE_CONNECT even in unsigned sessions ([MS-SMB2] 3.2.4.2.4).
	sign, signer := c.sign || cmd == smb2.CmdTreeConnect && c.dialect == smb2.Dialect311, c.signer
	if cl.signer != nil {
		sign, signer = true, cl.signer
	}
	if sign && signer != nil && cmd != smb2.CmdNegotiate && !(cmd == smb2.CmdSessionSetup && c.sessionID == 0) {
		flags := binary.LittleEndian.Uint32(msg[16:])
		binary.LittleEndian.PutUint32(msg[16:], flags|smb2.FlagSigned)
		c.parts = append(c.parts[:0], msg, cl.payload)
		sig := signer.Sign(c.parts...)
		copy(msg[48:64], sig[:])
	}
	smb2.PutTransportHeader(cl.req, len(msg)+len(cl.payload))
	if len(cl.payload) == 0 {
		return c.bw.Write(cl.req)
	}
	cl.bufsArr = [2][]byte{cl.req, cl.payload}
	return c.bw.Writev(cl.bufsArr[:])
}

// fail ends the connection with err: the socket is closed and every
// waiting request gets err. The first error wins.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	calls := c.calls
	c.calls = map[uint64]*call{}
	c.cond.Broadcast()
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range calls {
		cl.err = err
		cl.done <- struct{}{}
	}
}
