package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// MultichannelTarget is one SMB session of smbctl's own client with a
// channel per benchmark connection: Connect logs on at Addr, and
// connection i is a channel bound to the session at ChannelAddrs()[i mod
// n] (connection 0 is the session's first channel). Every connection's
// workers use the one open of the benchmark file, each request going to
// the channel with the fewest requests in flight (smbc.MultiFile); a
// channel whose connection dies is left out and its requests go to the
// others.
type MultichannelTarget struct {
	opts SMBOptions

	mu      sync.Mutex
	primary *smbc.Conn
	addrs   []string
	chans   []*smbc.Conn // every channel bound, in order, the primary first
	file    *smbc.MultiFile
}

// NewMultichannelTarget returns a target that has not connected yet.
func NewMultichannelTarget(o SMBOptions) *MultichannelTarget { return &MultichannelTarget{opts: o} }

// Connect logs on at the first server and finds where channels go: the
// servers of Addrs when there are several, else the addresses the
// server's interface list (FSCTL_QUERY_NETWORK_INTERFACE_INFO) offers
// with the first server's port, one per interface.
func (t *MultichannelTarget) Connect(ctx context.Context) ([]string, error) {
	o := &t.opts
	c, err := smbc.Dial(ctx, smbc.Options{Addr: o.Addr, Share: o.Share, User: o.User, Password: o.Password,
		Domain: o.Domain, Dialect: o.Dialect, Sign: o.Sign, Encrypt: o.Encrypt, Credits: o.Credits})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Addr, err)
	}
	addrs := o.Addrs
	if len(addrs) <= 1 {
		ifs, err := c.Interfaces()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: asking for the interface list: %w", o.Addr, err)
		}
		addrs = smbc.ChannelAddrs(o.Addr, ifs)
	}
	t.mu.Lock()
	t.primary, t.addrs, t.chans = c, addrs, []*smbc.Conn{c}
	t.mu.Unlock()
	return addrs, nil
}

// ChannelAddrs are the addresses channels go to, as Connect found them.
func (t *MultichannelTarget) ChannelAddrs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.addrs...)
}

// Open returns the benchmark file for connection conn: connection 0 opens
// it (creating it if needed) on the session's first channel, connection
// i > 0 binds channel i and adds it to the open's channels. Connect must
// have been called.
func (t *MultichannelTarget) Open(ctx context.Context, conn int) (File, error) {
	t.mu.Lock()
	primary, addrs := t.primary, t.addrs
	t.mu.Unlock()
	if primary == nil {
		return nil, errors.New("multichannel target: Open before Connect")
	}
	if conn == 0 {
		f, err := primary.OpenFile(t.opts.File, true)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.file = f.Spread()
		t.mu.Unlock()
		return t.file, nil
	}
	addr := addrs[conn%len(addrs)]
	c, err := primary.Bind(ctx, addr)
	var se *smbc.StatusError
	if errors.As(err, &se) && se.Status == smb2.StatusUserSessionDeleted {
		return nil, fmt.Errorf("binding channel %d to %s: %w (that server does not hold the session, made at %s: "+
			"it cannot bind a channel of another server's session)", conn+1, addr, err, primary.Addr())
	}
	if err != nil {
		return nil, fmt.Errorf("binding channel %d to %s: %w", conn+1, addr, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.chans = append(t.chans, c)
	t.file.Add(c)
	return sharedFile{t.file}, nil
}

// sharedFile is the open as a further connection sees it: its Close is
// connection 0's.
type sharedFile struct{ *smbc.MultiFile }

func (sharedFile) Close() error { return nil }

// Channels returns what each channel carried, in the order bound; a
// channel that died keeps its counts.
func (t *MultichannelTarget) Channels() []smbc.ChannelStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]smbc.ChannelStats, len(t.chans))
	for i, c := range t.chans {
		out[i] = c.Stats()
	}
	return out
}

// Lost returns the channels whose connection failed, by address, with the
// reason.
func (t *MultichannelTarget) Lost() map[string]error {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]error{}
	for _, c := range t.chans {
		if err := c.Err(); err != nil && !errors.Is(err, smbc.ErrClosed) {
			out[c.Addr()] = err
		}
	}
	return out
}

// Remove deletes the benchmark file over the first channel.
func (t *MultichannelTarget) Remove() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.primary == nil {
		return nil
	}
	return t.primary.Remove(t.opts.File)
}

// Close closes the bound channels, then logs the session off. Channels
// and Lost still report afterwards.
func (t *MultichannelTarget) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.primary == nil {
		return nil
	}
	for _, c := range t.chans[1:] {
		c.Close()
	}
	err := t.primary.Close()
	t.primary, t.file = nil, nil
	return err
}
