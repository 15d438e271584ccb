package ipc

import (
	"errors"
	"strings"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// Share types (shi*_type, [MS-SRVS] 2.2.2.4).
const (
	ShareTypeDisk    = 0x00000000 // STYPE_DISKTREE
	ShareTypeIPC     = 0x00000003 // STYPE_IPC
	ShareTypeSpecial = 0x80000000 // STYPE_SPECIAL
)

// UnlimitedUses is SHI_USES_UNLIMITED; a zero ShareInfo.MaxUses is sent as it.
const UnlimitedUses = 0xffffffff

// ShareInfo describes one share as srvsvc reports it ([MS-SRVS] 2.2.4.22-29).
type ShareInfo struct {
	Name        string
	Type        uint32 // ShareTypeDisk, ShareTypeIPC, optionally | ShareTypeSpecial
	Comment     string
	Path        string // as shown to clients, e.g. `C:\export\data`
	MaxUses     uint32 // 0 means unlimited
	CurrentUses uint32
	Flags       uint32 // shi1005_flags / shi501_flags (CSC policy etc.)
}

// Env is what the pipes know about the server; it is read, never written.
type Env struct {
	ServerName string             // NetBIOS-ish name, e.g. "SMBCLUSTER"
	Domain     string             // workgroup, e.g. "WORKGROUP"
	Comment    string             // server comment (sv101_comment)
	Shares     func() []ShareInfo // current shares incl. IPC$; called per request
	// Security, when set, lets clients authenticate DCE/RPC on the pipes
	// (auth levels connect to privacy inside the SMB session, as
	// smbtorture's [sign] bindings do); nil: authentication level none.
	Security func() *dcerpc.Security
}

func (e *Env) shares() []ShareInfo {
	if e.Shares == nil {
		return nil
	}
	return e.Shares()
}

// Errors of Open and of Pipe methods. A server maps them to NTSTATUS:
//
//	ErrNoSuchPipe -> STATUS_OBJECT_NAME_NOT_FOUND
//	ErrPipeEmpty  -> STATUS_PIPE_EMPTY for a READ (a DCE/RPC client never
//	                 reads before it has written a complete request, so there
//	                 is nothing to wait for)
//	ErrPipeBusy   -> STATUS_PIPE_BUSY (transceive while output is unread, or
//	                 too much unread output)
//	ErrProtocol   -> STATUS_PIPE_BROKEN; later calls fail too
//	ErrClosed     -> STATUS_FILE_CLOSED
var (
	ErrNoSuchPipe = errors.New("ipc: no such pipe")
	ErrPipeEmpty  = errors.New("ipc: no data pending on the pipe")
	ErrPipeBusy   = errors.New("ipc: pipe has unread output")
	ErrProtocol   = errors.New("ipc: DCE/RPC protocol error, pipe broken")
	ErrClosed     = errors.New("ipc: pipe closed")
)

// Pipe is one open of a named pipe. Safe for use by one goroutine at a time
// (the server serializes per open).
type Pipe interface {
	// Write delivers a client write (a whole or partial DCE/RPC PDU, or
	// several; partial PDUs are buffered until complete).
	Write(p []byte) (int, error)
	// Read returns up to max bytes of the next pending message; more reports
	// that the message continues (the server then answers
	// STATUS_BUFFER_OVERFLOW with the partial data). The returned slice is
	// not reused by the Pipe.
	//
	// With nothing pending Read returns ErrPipeEmpty. Output only ever
	// appears as the result of a Write on the same Pipe, so a server may
	// answer STATUS_PIPE_EMPTY, or, for Windows' blocking-pipe behaviour,
	// keep the READ pending and retry it after the next Write on this open.
	Read(max int) (data []byte, more bool, err error)
	// Transceive = Write(in) then Read(max) (FSCTL_PIPE_TRANSCEIVE). It
	// fails with ErrPipeBusy, writing nothing, while earlier output is
	// unread, as Windows does ([MS-FSCC] 2.3.48).
	Transceive(in []byte, max int) (out []byte, more bool, err error)
	Close() error
}

// maxPendingOutput bounds unread output; a Write beyond it fails with
// ErrPipeBusy.
const maxPendingOutput = 1 << 20

// service is one pipe name and the interfaces behind it.
type service struct {
	secAddr string
	ifaces  func(env *Env) []*dcerpc.Interface
}

var services = map[string]service{
	"srvsvc": {`\PIPE\srvsvc`, func(env *Env) []*dcerpc.Interface { return []*dcerpc.Interface{srvsvcInterface(env)} }},
	"wkssvc": {`\PIPE\wkssvc`, func(env *Env) []*dcerpc.Interface { return []*dcerpc.Interface{wkssvcInterface(env)} }},
}

// canonical lower-cases a pipe name and strips a leading `\` or `\PIPE\`.
func canonical(name string) string {
	name = strings.ToLower(strings.TrimLeft(name, `\`))
	return strings.TrimPrefix(name, `pipe\`)
}

// Known reports whether Open would succeed for name (case-insensitive,
// without or with the `\PIPE\` prefix).
func Known(name string) bool {
	_, ok := services[canonical(name)]
	return ok
}

// Open opens the named pipe name for one client.
func Open(name string, env *Env) (Pipe, error) {
	s, ok := services[canonical(name)]
	if !ok {
		return nil, ErrNoSuchPipe
	}
	if env == nil {
		env = &Env{}
	}
	conn := dcerpc.NewConn(s.secAddr, s.ifaces(env)...)
	if env.Security != nil {
		if sec := env.Security(); sec != nil {
			conn.SetSecurity(sec)
		}
	}
	return &pipe{conn: conn}, nil
}

type pipe struct {
	conn   *dcerpc.Conn
	in     []byte   // unprocessed input: an incomplete PDU, or PDUs held back by the output bound
	out    [][]byte // pending messages, the first possibly partly read
	outLen int
	err    error // sticky: ErrProtocol or ErrClosed
}

func (p *pipe) emit(pdu []byte) {
	p.out = append(p.out, pdu)
	p.outLen += len(pdu)
}

func (p *pipe) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.outLen > maxPendingOutput {
		return 0, ErrPipeBusy
	}
	p.in = append(p.in, b...)
	if err := p.process(); err != nil {
		return 0, err
	}
	return len(b), nil
}

// process handles the complete PDUs at the start of p.in, stopping early
// while unread output exceeds maxPendingOutput (Read resumes it), so that a
// write full of small requests cannot make the pipe hold unbounded output.
func (p *pipe) process() error {
	off := 0
	for p.outLen <= maxPendingOutput {
		rest := p.in[off:]
		n := dcerpc.FragLength(rest)
		if len(rest) < dcerpc.HeaderSize || len(rest) < n {
			break
		}
		if n < dcerpc.HeaderSize || p.conn.Handle(rest[:n], p.emit) != nil {
			p.err, p.in = ErrProtocol, nil
			return ErrProtocol
		}
		off += n
	}
	p.in = append(p.in[:0], p.in[off:]...)
	if len(p.in) == 0 && cap(p.in) > 64<<10 {
		p.in = nil
	}
	return nil
}

func (p *pipe) Read(n int) ([]byte, bool, error) {
	if p.err == ErrClosed {
		return nil, false, ErrClosed
	}
	if len(p.out) == 0 && p.err == nil {
		p.process()
	}
	if len(p.out) == 0 {
		if p.err != nil {
			return nil, false, p.err
		}
		return nil, false, ErrPipeEmpty
	}
	n = max(n, 0)
	m := p.out[0]
	if len(m) > n {
		p.out[0] = m[n:]
		p.outLen -= n
		return m[:n:n], true, nil
	}
	p.out[0] = nil
	p.out = p.out[1:]
	p.outLen -= len(m)
	return m, false, nil
}

func (p *pipe) Transceive(in []byte, n int) ([]byte, bool, error) {
	if p.err == nil && len(p.out) > 0 {
		return nil, false, ErrPipeBusy
	}
	if _, err := p.Write(in); err != nil {
		return nil, false, err
	}
	return p.Read(n)
}

func (p *pipe) Close() error {
	p.err, p.in, p.out, p.outLen = ErrClosed, nil, nil, 0
	return nil
}
