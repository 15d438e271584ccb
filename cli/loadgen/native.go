package loadgen

import (
	"context"
	"errors"
	"fmt"
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
	o := t.opts
	c, err := smbc.Dial(ctx, smbc.Options{Addr: o.Addr, Share: o.Share, User: o.User, Password: o.Password,
		Domain: o.Domain, Dialect: o.Dialect, Sign: o.Sign, Encrypt: o.Encrypt, Credits: o.Credits})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Addr, err)
	}
	t.mu.Lock()
	t.conns = append(t.conns, c)
	t.mu.Unlock()
	f, err := c.OpenFile(o.File, true)
	if err != nil {
		return nil, err
	}
	return f, nil
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
