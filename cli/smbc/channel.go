package smbc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// Bind opens a connection to addr (host:port) and binds it to c's session
// as a further channel ([MS-SMB2] 3.2.4.1.7): it negotiates c's dialect
// with c's ClientGuid, authenticates as c's user with SESSION_SETUP
// requests that carry SMB2_SESSION_FLAG_BINDING and are signed with the
// session's signing key, and derives the channel's own signing key from
// that authentication (for 3.1.1 with the channel's own preauth integrity
// hash, [MS-SMB2] 3.2.5.3.3). The channel shares the session's tree
// connect, opens and encryption keys: File.On and File.Spread use an open
// through it. Closing the returned Conn closes the channel's connection
// only; the session lives on c.
func (c *Conn) Bind(ctx context.Context, addr string) (*Conn, error) {
	return c.bindAs(ctx, addr, c.o, c.sessionID)
}

// bindAs is Bind with the credentials of o and the session id given.
func (c *Conn) bindAs(ctx context.Context, addr string, o Options, sessionID uint64) (*Conn, error) {
	if c.dialect < smb2.Dialect300 {
		return nil, fmt.Errorf("bind %s: dialect %#04x has no multichannel", addr, c.dialect)
	}
	o.Addr, o.Dialect = addr, c.dialect
	b, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	b.clientGUID, b.bound, b.sessionID = c.clientGUID, true, sessionID
	if err := b.bind(c); err != nil {
		b.shutdown()
		return nil, fmt.Errorf("bind %s: %w", addr, err)
	}
	return b, nil
}

// bind runs NEGOTIATE and the binding SESSION_SETUP on b for the session
// b.sessionID names, which s holds.
func (b *Conn) bind(s *Conn) error {
	var preauth signing.PreauthHash
	if err := b.negotiate(&preauth); err != nil {
		return fmt.Errorf("negotiate: %w", err)
	}
	if b.dialect != s.dialect || b.cipherID != s.cipherID || b.signAlg != s.signAlg {
		return fmt.Errorf("%w: the channel negotiated dialect %#04x, cipher %d, signing %d; the session has %#04x, %d, %d",
			ErrProtocol, b.dialect, b.cipherID, b.signAlg, s.dialect, s.cipherID, s.signAlg)
	}
	resp, cl, key, err := b.authenticate(&preauth, s.sessSigner)
	if err != nil {
		return fmt.Errorf("session setup: %w", err)
	}
	defer cl.release()
	if resp.SessionFlags&smb2.SessionFlagIsGuest != 0 {
		return errors.New("session setup: bound as guest")
	}
	sc, err := signing.NewSession(signing.Client, b.dialect, b.cipherID, b.signAlg, key, preauth[:])
	if err != nil {
		return err
	}
	if cl.rh.Flags&smb2.FlagSigned == 0 {
		return fmt.Errorf("%w: final binding SESSION_SETUP", ErrUnsigned)
	}
	if !sc.Signer.Verify(cl.resp) {
		return fmt.Errorf("%w: final binding SESSION_SETUP", ErrBadSignature)
	}
	b.signer, b.sessSigner = sc.Signer, s.sessSigner
	b.sign, b.treeID = s.sign, s.treeID
	b.enc, b.dec, b.nonces = s.enc, s.dec, s.nonces
	b.setEncrypt(s.Encrypted())
	return nil
}

// Interface is one address a server offers multichannel clients
// (FSCTL_QUERY_NETWORK_INTERFACE_INFO, [MS-SMB2] 2.2.32.5).
type Interface struct {
	Index     uint32 // IfIndex: addresses with the same index are one interface
	IP        net.IP
	LinkSpeed uint64 // bits per second
	RSS       bool
}

// Interfaces asks the server for the addresses it offers multichannel
// clients ([MS-SMB2] 3.2.4.20.4).
func (c *Conn) Interfaces() ([]Interface, error) {
	cl := c.newCall(smb2.CmdIoctl, &smb2.IoctlRequest{CtlCode: smb2.FsctlQueryNetworkInterfaceInfo,
		FileID: smb2.AnyFileID, MaxOutputResponse: 64 << 10, Flags: smb2.IoctlIsFsctl})
	defer cl.release()
	if err := c.do(cl, c.creditCharge(64<<10)); err != nil {
		return nil, err
	}
	var resp smb2.IoctlResponse
	if err := resp.Decode(cl.resp); err != nil {
		return nil, fmt.Errorf("%w: IOCTL: %v", ErrProtocol, err)
	}
	if len(resp.Output) == 0 {
		return nil, nil
	}
	infos, err := fscc.DecodeNetworkInterfaces(resp.Output)
	if err != nil {
		return nil, fmt.Errorf("%w: NETWORK_INTERFACE_INFO: %v", ErrProtocol, err)
	}
	out := make([]Interface, len(infos))
	for i, ni := range infos {
		out[i] = Interface{Index: ni.IfIndex, IP: ni.IP, LinkSpeed: ni.LinkSpeed, RSS: ni.Capability&fscc.RSSCapable != 0}
	}
	return out, nil
}

// Addr is the server address the connection was dialled to.
func (c *Conn) Addr() string { return c.o.Addr }

// SessionID is the session's id, the same on every channel.
func (c *Conn) SessionID() uint64 { return c.sessionID }

// Err is why the connection failed, nil while it works.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// channelStats count the READs and WRITEs a connection carried.
type channelStats struct {
	reads, writes         atomic.Int64
	readBytes, writeBytes atomic.Int64
}

// ChannelStats are what one connection carried: READ and WRITE requests
// answered with success and their data bytes.
type ChannelStats struct {
	Addr       string
	Reads      int64
	Writes     int64
	ReadBytes  int64
	WriteBytes int64
}

// Stats returns what the connection carried so far.
func (c *Conn) Stats() ChannelStats {
	s := &c.stats
	return ChannelStats{Addr: c.o.Addr, Reads: s.reads.Load(), Writes: s.writes.Load(),
		ReadBytes: s.readBytes.Load(), WriteBytes: s.writeBytes.Load()}
}

// On returns the same open used through c, another channel of its
// session.
func (f *File) On(c *Conn) *File { return &File{c: c, id: f.id, writeFlags: f.writeFlags} }

// MultiFile is one open used through several channels of its session.
// Each READ or WRITE goes to the live channel with the fewest of the
// MultiFile's requests in flight (ties rotate), so a slower channel gets
// fewer. A request whose channel fails (its connection is lost) is sent
// again on another channel, and the failed channel is not used again: a
// client loses a channel, not its I/O. Safe for concurrent use.
type MultiFile struct {
	id    smb2.FileID
	live  atomic.Pointer[[]*Conn] // replaced, never changed in place
	next  atomic.Uint32
	lost  atomic.Pointer[error] // the last channel failure, for when none is left
	order chan struct{}         // serializes Add and drop
}

// Spread returns the open f used through chans as well as its own
// channel.
func (f *File) Spread(chans ...*Conn) *MultiFile {
	m := &MultiFile{id: f.id, order: make(chan struct{}, 1)}
	all := append([]*Conn{f.c}, chans...)
	m.live.Store(&all)
	return m
}

// Add uses channel c as well.
func (m *MultiFile) Add(c *Conn) {
	m.order <- struct{}{}
	defer func() { <-m.order }()
	all := append(append([]*Conn(nil), *m.live.Load()...), c)
	m.live.Store(&all)
}

// Channels returns the channels still in use.
func (m *MultiFile) Channels() []*Conn { return append([]*Conn(nil), *m.live.Load()...) }

// drop stops using c after its connection failed with err.
func (m *MultiFile) drop(c *Conn, err error) {
	m.order <- struct{}{}
	defer func() { <-m.order }()
	m.lost.Store(&err)
	var keep []*Conn
	for _, x := range *m.live.Load() {
		if x != c {
			keep = append(keep, x)
		}
	}
	m.live.Store(&keep)
}

// pick returns the channel for the next request.
func (m *MultiFile) pick() (*Conn, error) {
	chans := *m.live.Load()
	if len(chans) == 0 {
		if err := m.lost.Load(); err != nil {
			return nil, fmt.Errorf("smbc: every channel failed, the last with: %w", *err)
		}
		return nil, ErrClosed
	}
	i := int(m.next.Add(1) % uint32(len(chans)))
	best := chans[i]
	for k := 1; k < len(chans); k++ {
		if c := chans[(i+k)%len(chans)]; c.pending.Load() < best.pending.Load() {
			best = c
		}
	}
	return best, nil
}

// retry reports whether a request that failed with err on c goes to
// another channel: c's connection failed, and c is dropped.
func (m *MultiFile) retry(c *Conn, err error) bool {
	if err == nil {
		return false
	}
	if cerr := c.Err(); cerr != nil {
		m.drop(c, cerr)
		return true
	}
	return false
}

// ReadAt reads len(b) bytes at off through one channel, as File.ReadAt.
func (m *MultiFile) ReadAt(b []byte, off int64) (int, error) {
	return m.on(func(f File) (int, error) { return f.ReadAt(b, off) })
}

// WriteAt writes b at off through one channel, as File.WriteAt. A WRITE
// sent again after its channel failed rewrites the same bytes.
func (m *MultiFile) WriteAt(b []byte, off int64) (int, error) {
	return m.on(func(f File) (int, error) { return f.WriteAt(b, off) })
}

// on runs op on the least busy channel, again on another one while the
// channel it ran on fails.
func (m *MultiFile) on(op func(File) (int, error)) (int, error) {
	for {
		c, err := m.pick()
		if err != nil {
			return 0, err
		}
		c.pending.Add(1)
		n, err := op(File{c: c, id: m.id})
		c.pending.Add(-1)
		if !m.retry(c, err) {
			return n, err
		}
	}
}

// Size returns the file's EndOfFile, asked through one channel.
func (m *MultiFile) Size() (int64, error) {
	for {
		c, err := m.pick()
		if err != nil {
			return 0, err
		}
		f := File{c: c, id: m.id}
		n, err := f.Size()
		if !m.retry(c, err) {
			return n, err
		}
	}
}

// Close closes the open through one channel.
func (m *MultiFile) Close() error {
	for {
		c, err := m.pick()
		if err != nil {
			return err
		}
		err = c.closeFile(m.id)
		if !m.retry(c, err) {
			return err
		}
	}
}

// ChannelAddrs lists where channels go: the addresses of ifs (with port,
// the port of addr, the session's server) in the order offered but addr
// first when offered, or addr alone when ifs is empty. Addresses of one
// interface (same IfIndex) are listed once, the first offered.
func ChannelAddrs(addr string, ifs []Interface) []string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || len(ifs) == 0 {
		return []string{addr}
	}
	var out []string
	seen := map[uint32]bool{}
	for _, i := range ifs {
		if seen[i.Index] || i.IP == nil {
			continue
		}
		seen[i.Index] = true
		out = append(out, net.JoinHostPort(strings.Trim(i.IP.String(), "[]"), port))
	}
	if len(out) == 0 {
		return []string{addr}
	}
	if i := slices.Index(out, addr); i > 0 {
		out = append(append([]string{addr}, out[:i]...), out[i+1:]...)
	}
	return out
}
