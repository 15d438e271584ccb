package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/smbcluster/smbcluster/cli/smbc"
)

// NativeTarget opens one smbc connection (session and tree) per benchmark
// connection: requests are pipelined up to the credits granted, READ data
// lands in the worker's buffer and WRITE data is sent from it, so the
// client costs one copy per byte read and none per byte written.
type NativeTarget struct {
	opts  SMBOptions
	mu    sync.Mutex
	conns []*smbc.Conn
}

// NewNativeTarget returns a target that has not connected yet.
func NewNativeTarget(o SMBOptions) *NativeTarget { return &NativeTarget{opts: o} }

// Open dials connection conn and opens (creating if needed) the benchmark
// file. Requests on it fail once ctx is done.
func (t *NativeTarget) Open(ctx context.Context, conn int) (File, error) {
	c, err := t.dial(ctx, conn)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conns = append(t.conns, c)
	t.mu.Unlock()
	f, err := c.OpenFile(t.opts.File, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// dial connects connection conn to its server.
func (t *NativeTarget) dial(ctx context.Context, conn int) (*smbc.Conn, error) {
	o := &t.opts
	addr := o.AddrOf(conn)
	c, err := smbc.Dial(ctx, smbc.Options{Addr: addr, Share: o.Share, User: o.User, Password: o.Password,
		Domain: o.Domain, Dialect: o.Dialect, Sign: o.Sign, Encrypt: o.Encrypt, Credits: o.Credits})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return c, nil
}

// Remove deletes the benchmark file over the first connection.
func (t *NativeTarget) Remove() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.conns) == 0 {
		return nil
	}
	return t.conns[0].Remove(t.opts.File)
}

// Close logs every connection off.
func (t *NativeTarget) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, c := range t.conns {
		errs = append(errs, c.Close())
	}
	t.conns = nil
	return errors.Join(errs...)
}

// NativeOpenTarget dials smbc connections for the open/close workload:
// each open is one CREATE (read access, no lease), each read one READ
// into the worker's buffer, each close one CLOSE.
type NativeOpenTarget struct{ opts SMBOptions }

// NewNativeOpenTarget returns an OpenTarget over smbctl's own client.
func NewNativeOpenTarget(o SMBOptions) *NativeOpenTarget { return &NativeOpenTarget{opts: o} }

// Dial connects connection conn to its server (SMBOptions.AddrOf).
func (t *NativeOpenTarget) Dial(ctx context.Context, conn int) (OpenConn, error) {
	c, err := (&NativeTarget{opts: t.opts}).dial(ctx, conn)
	if err != nil {
		return nil, err
	}
	return nativeOpenConn{c}, nil
}

type nativeOpenConn struct{ c *smbc.Conn }

func (n nativeOpenConn) OpenClose(name string, buf []byte) (int, error) {
	f, err := n.c.OpenRead(name)
	if err != nil {
		return 0, err
	}
	var got int
	if len(buf) > 0 { // f.ReadAt, not readPrefix: f stays on the stack
		if got, err = f.ReadAt(buf, 0); err == io.EOF {
			err = nil
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return got, err
}

func (n nativeOpenConn) Put(name string, data []byte) error {
	f, err := n.c.OpenFile(name, true)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	return errors.Join(err, f.Close())
}

func (n nativeOpenConn) Mkdir(name string) error     { return n.c.Mkdir(name) }
func (n nativeOpenConn) Remove(name string) error    { return n.c.Remove(name) }
func (n nativeOpenConn) RemoveDir(name string) error { return n.c.RemoveDir(name) }
func (n nativeOpenConn) Close() error                { return n.c.Close() }
