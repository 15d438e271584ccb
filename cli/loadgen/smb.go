package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	smb2 "github.com/cloudsoda/go-smb2"
)

// SMBOptions say how to reach the benchmark file.
type SMBOptions struct {
	Addr string // host:port
	// Addrs, if set, are several servers (host:port): connection i goes to
	// Addrs[i mod len(Addrs)], spreading the connections over the nodes
	// of a cluster. Addr is then Addrs[0].
	Addrs    []string
	Share    string
	User     string
	Password string
	Domain   string
	File     string // path of the file inside the share
	Sign     bool   // require message signing
	Encrypt  bool   // encrypt every request (NativeTarget; go-smb2 encrypts only when the server asks)
	Dialect  uint16 // 0 negotiates 2.0.2 to 3.1.1; else exactly this dialect

	// Credits is the credit balance the client asks for; it bounds the
	// requests in flight on one connection (a 1 MiB READ costs 16).
	Credits uint16
}

// SMBTarget opens one SMB session per connection with go-smb2. go-smb2
// multiplexes concurrent requests on a connection: requests are encoded and
// written under the connection's mutex, each waits on its own channel, and
// one receiver goroutine routes responses by MessageId, so IODepth
// goroutines calling ReadAt/WriteAt keep that many requests in flight (up
// to the credits granted).
type SMBTarget struct {
	opts SMBOptions

	mu       sync.Mutex
	sessions []*smb2.Session
	shares   []*smb2.Share
}

// NewSMBTarget returns a target that has not connected yet.
func NewSMBTarget(o SMBOptions) *SMBTarget { return &SMBTarget{opts: o} }

// ParseDialect maps "3.1.1", "3.0.2", "3.0", "2.1" and "2.0.2" to the
// dialect revision ([MS-SMB2] 2.2.3); "" means negotiate any.
func ParseDialect(s string) (uint16, error) {
	switch s {
	case "":
		return 0, nil
	case "3.1.1":
		return 0x311, nil
	case "3.0.2":
		return 0x302, nil
	case "3.0":
		return 0x300, nil
	case "2.1":
		return 0x210, nil
	case "2.0.2":
		return 0x202, nil
	}
	return 0, fmt.Errorf("unknown dialect %q (want 3.1.1, 3.0.2, 3.0, 2.1 or 2.0.2)", s)
}

// Open dials a new session, connects the share and opens (creating if
// needed) the benchmark file for reading and writing. Requests made through
// the file are cancelled with ctx.
func (t *SMBTarget) Open(ctx context.Context, conn int) (File, error) {
	d := &smb2.Dialer{
		MaxCreditBalance: t.opts.Credits,
		Negotiator: smb2.Negotiator{
			RequireMessageSigning: t.opts.Sign,
			SpecifiedDialect:      t.opts.Dialect,
		},
		Initiator: &smb2.NTLMInitiator{User: t.opts.User, Password: t.opts.Password, Domain: t.opts.Domain},
	}
	addr := t.opts.AddrOf(conn)
	s, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("session setup with %s: %w", addr, err)
	}
	sh, err := s.Mount(t.opts.Share)
	if err != nil {
		s.Logoff()
		return nil, fmt.Errorf("tree connect to %s: %w", t.opts.Share, err)
	}
	t.mu.Lock()
	t.sessions = append(t.sessions, s)
	t.shares = append(t.shares, sh)
	t.mu.Unlock()
	f, err := sh.WithContext(ctx).OpenFile(t.opts.File, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.opts.File, err)
	}
	return smbFile{f}, nil
}

// Remove deletes the benchmark file over the first connection.
func (t *SMBTarget) Remove() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.shares) == 0 {
		return nil
	}
	return t.shares[0].Remove(t.opts.File)
}

// Close disconnects every session.
func (t *SMBTarget) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for i, s := range t.sessions {
		errs = append(errs, t.shares[i].Umount(), s.Logoff())
	}
	t.sessions, t.shares = nil, nil
	return errors.Join(errs...)
}

type smbFile struct{ f *smb2.File }

func (s smbFile) ReadAt(b []byte, off int64) (int, error)  { return s.f.ReadAt(b, off) }
func (s smbFile) WriteAt(b []byte, off int64) (int, error) { return s.f.WriteAt(b, off) }
func (s smbFile) Close() error                             { return s.f.Close() }

func (s smbFile) Size() (int64, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// AddrOf is the server connection conn goes to.
func (o *SMBOptions) AddrOf(conn int) string {
	if len(o.Addrs) == 0 {
		return o.Addr
	}
	return o.Addrs[conn%len(o.Addrs)]
}

// DefaultPort adds SMB's port 445 to addr when it has none.
func DefaultPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), "445")
}

// SMBOpenTarget dials go-smb2 sessions for the open/close workload.
type SMBOpenTarget struct{ opts SMBOptions }

// NewSMBOpenTarget returns an OpenTarget over github.com/cloudsoda/go-smb2.
func NewSMBOpenTarget(o SMBOptions) *SMBOpenTarget { return &SMBOpenTarget{opts: o} }

// Dial logs on to connection conn's server and mounts the share.
func (t *SMBOpenTarget) Dial(ctx context.Context, conn int) (OpenConn, error) {
	d := &smb2.Dialer{
		MaxCreditBalance: t.opts.Credits,
		Negotiator:       smb2.Negotiator{RequireMessageSigning: t.opts.Sign, SpecifiedDialect: t.opts.Dialect},
		Initiator:        &smb2.NTLMInitiator{User: t.opts.User, Password: t.opts.Password, Domain: t.opts.Domain},
	}
	addr := t.opts.AddrOf(conn)
	s, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("session setup with %s: %w", addr, err)
	}
	sh, err := s.Mount(t.opts.Share)
	if err != nil {
		s.Logoff()
		return nil, fmt.Errorf("tree connect to %s: %w", t.opts.Share, err)
	}
	return smbOpenConn{s: s, sh: sh.WithContext(ctx)}, nil
}

type smbOpenConn struct {
	s  *smb2.Session
	sh *smb2.Share
}

func (c smbOpenConn) OpenClose(name string, buf []byte) (int, error) {
	f, err := c.sh.Open(name)
	if err != nil {
		return 0, err
	}
	n, err := readPrefix(f, buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func (c smbOpenConn) Put(name string, data []byte) error { return c.sh.WriteFile(name, data, 0o644) }
func (c smbOpenConn) Mkdir(name string) error            { return c.sh.MkdirAll(name, 0o755) }
func (c smbOpenConn) Remove(name string) error           { return c.sh.Remove(name) }
func (c smbOpenConn) RemoveDir(name string) error        { return c.sh.Remove(name) }
func (c smbOpenConn) Close() error                       { return errors.Join(c.sh.Umount(), c.s.Logoff()) }
