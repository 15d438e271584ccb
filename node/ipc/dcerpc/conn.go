package dcerpc

import (
	"context"
	"sync"
)

// Fault statuses ([C706] appendix E; [MS-RPCE] 2.2.2.6 lists those Windows uses).
const (
	StatusOpRangeError  = 0x1c010002 // nca_s_op_rng_error
	StatusUnknownIf     = 0x1c010003 // nca_s_unknown_if
	StatusProtoError    = 0x1c01000b // nca_s_proto_error
	StatusInvalidTag    = 0x1c000006 // nca_s_fault_invalid_tag
	StatusBadStubData   = 0x000006f7 // nca_s_fault_ndr (RPC_X_BAD_STUB_DATA)
	StatusAccessDenied  = 0x00000005 // nca_s_fault_access_denied
	StatusServerTooBusy = 0x000006bb // RPC_S_SERVER_TOO_BUSY
)

const (
	// featuresSupported are the bind time features acknowledged
	// ([MS-RPCE] 2.2.2.14): SecurityContextMultiplexingSupported (trivially,
	// with no security contexts) and KeepConnectionOnOrphanSupported.
	featuresSupported = 0x03
	// defaultAssocGroupID is given to clients that ask for a new group.
	defaultAssocGroupID = 0x53f0
)

// MaxFrag is the largest fragment this server sends or asks to receive, the
// value Windows uses over named pipes.
const MaxFrag = 4280

// maxRequest bounds a reassembled request's stub.
const maxRequest = 256 << 10

// minFrag is MustRecvFragSize ([C706] 12.6.2): every peer must accept
// fragments of this size, so a client advertising less is broken.
const minFrag = 1432

// Interface is an RPC interface a Conn serves.
type Interface struct {
	Syntax SyntaxID
	// Call executes operation opnum on the [in] stub data and returns the
	// [out] stub data, or a non-zero fault status to answer with a fault PDU
	// instead. in is only valid during the call.
	Call func(opnum uint16, in []byte) (out []byte, fault uint32)
	// CallContext, when set, is used instead of Call: ctx ends when the
	// connection does, so that a call may wait ([MS-SWN] AsyncNotify).
	CallContext func(ctx context.Context, opnum uint16, in []byte) (out []byte, fault uint32)
	// MinLevel is the authentication level a call must be made at; calls
	// below it fail with nca_s_fault_access_denied. Zero: any.
	MinLevel uint8
	// NDR64 says that CallContext also speaks the 64-bit transfer syntax
	// (IsNDR64 tells a call which one it gets).
	NDR64 bool
	// Concurrent lets CallContext calls run on goroutines of their own
	// where the Conn allows it (SetConcurrent), so that a call that waits
	// does not hold up the association's next ones (an UnRegister while
	// an AsyncNotify waits).
	Concurrent bool
}

// call is a request being reassembled from fragments.
type call struct {
	active    bool
	id        uint32
	contextID uint16
	opnum     uint16
	stub      []byte
}

// pcontext is a negotiated presentation context.
type pcontext struct {
	iface    *Interface
	abstract SyntaxID // as the client named it (its minor version may be lower)
	ndr64    bool
}

type peerKey struct{}

type ndr64Key struct{}

// IsNDR64 reports whether a call's stub data is in NDR64 ([MS-RPCE]
// 2.2.5), the transfer syntax of its presentation context.
func IsNDR64(ctx context.Context) bool {
	b, _ := ctx.Value(ndr64Key{}).(bool)
	return b
}

// WithPeer returns ctx carrying the client's address, which calls find
// with Peer (the TCP transport sets it).
func WithPeer(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, peerKey{}, addr)
}

// Peer returns the client's address a call's context carries, "" if none.
func Peer(ctx context.Context) string {
	s, _ := ctx.Value(peerKey{}).(string)
	return s
}

type userKey struct{}

// WithUser returns ctx carrying the user a call is made by, which calls
// find with User (Conn sets it from its security context).
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// User returns the user the association authenticated, as its security
// provider names it ("" for none): calls that decide by who calls use it.
func User(ctx context.Context) string {
	s, _ := ctx.Value(userKey{}).(string)
	return s
}

// maxConcurrent bounds the calls of one association running at once.
const maxConcurrent = 16

// Conn is the server side of one association: a named pipe open or a TCP
// connection. Handle is called by one goroutine at a time; the calls it
// starts on goroutines of their own (SetConcurrent) answer under sendMu,
// which Handle holds too, so responses are signed in the order sent.
type Conn struct {
	// Immutable.
	ifaces  []*Interface
	secAddr string

	sendMu     sync.Mutex        // held by Handle and by a concurrent call answering
	concurrent bool              // set before use
	running    map[uint32]func() // concurrent calls by call_id: their cancel; under runMu
	runMu      sync.Mutex

	bound      bool
	maxXmit    int // largest fragment we may send
	assoc      uint32
	contexts   map[uint16]pcontext
	call       call
	sec        *Security
	auth       authState
	headerSign bool
}

// NewConn returns an association serving ifaces; secAddr is the secondary
// address put in the bind_ack, e.g. `\PIPE\srvsvc`.
func NewConn(secAddr string, ifaces ...*Interface) *Conn {
	return &Conn{ifaces: ifaces, secAddr: secAddr, maxXmit: MaxFrag, contexts: map[uint16]pcontext{}}
}

// SetConcurrent lets calls of Concurrent interfaces run on goroutines of
// their own; emit must then be safe for concurrent use (a TCP
// connection's whole-PDU writes). Call it before Handle.
func (c *Conn) SetConcurrent() {
	c.concurrent = true
	c.running = map[uint32]func(){}
}

// SetSecurity lets the association authenticate clients with sec; without
// it only authentication level none is accepted. Call it before Handle.
func (c *Conn) SetSecurity(sec *Security) { c.sec = sec }

// AuthLevel returns the association's authentication level once its
// security context is established (AuthLevelNone otherwise).
func (c *Conn) AuthLevel() uint8 {
	if c.auth.ctx == nil || !c.auth.done || c.auth.failed {
		return AuthLevelNone
	}
	return c.auth.level
}

// Handle processes one complete PDU and passes each PDU of the answer, in
// order, to emit; each emitted slice is freshly allocated. It returns an error
// only for input that breaks the protocol beyond answering, after which the
// caller should close the pipe.
func (c *Conn) Handle(pdu []byte, emit func([]byte)) error {
	return c.HandleContext(context.Background(), pdu, emit)
}

// HandleContext is Handle with the connection's context, which calls see.
// An authenticated PDU may be decrypted in place.
func (c *Conn) HandleContext(ctx context.Context, pdu []byte, emit func([]byte)) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	var h Header
	if err := h.Decode(pdu); err != nil {
		if len(pdu) >= HeaderSize && pdu[2] == TypeBind && err != ErrShort {
			nak := BindNak{CallID: callID(pdu), Reason: NakProtocolError}
			emit(encode(&nak))
			return nil
		}
		return err
	}
	switch h.Type {
	case TypeBind:
		c.bind(pdu, emit)
	case TypeAlterContext:
		c.alterContext(pdu, emit)
	case TypeRequest:
		c.request(ctx, pdu, emit)
	case TypeCoCancel, TypeOrphaned:
		// The call is abandoned; nothing is sent back ([MS-RPCE] 3.3.1.5.10).
		if c.call.active && c.call.id == h.CallID {
			c.call = call{}
		}
		c.cancelRunning(h.CallID)
	case TypeAuth3:
		c.auth3(pdu, &h)
	case TypeShutdown:
		// Advisory.
	default:
		return ErrFormat
	}
	return nil
}

func callID(pdu []byte) uint32 {
	return uint32(pdu[12]) | uint32(pdu[13])<<8 | uint32(pdu[14])<<16 | uint32(pdu[15])<<24
}

type encoder interface {
	Size() int
	Encode(b []byte)
}

func encode(e encoder) []byte {
	b := make([]byte, e.Size())
	e.Encode(b)
	return b
}
