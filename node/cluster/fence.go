package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrSuperseded is returned by Run when another process joined the
// cluster under the node's name (the node's epoch in etcd moved past this
// incarnation's): this process stopped serving the moment it saw it and
// must exit, leaving the name to the newer one.
var ErrSuperseded = errors.New("superseded by a newer incarnation of the node")

var (
	// errLeaseLost ends a Fencing whose lease deadline passed or whose
	// lease etcd no longer knows; the agent joins again.
	errLeaseLost = errors.New("cluster lease lost")
	// errLeft ends the Fencing of an agent that left the cluster.
	errLeft = errors.New("left the cluster")
	// errNotJoined is the state of an agent before it joined.
	errNotJoined = errors.New("not joined")
)

// Fencing is one incarnation of the node in the cluster: the right to act
// on cluster state under one epoch. It is valid from the join that took
// the epoch until the lease deadline passes, the node is superseded or
// removed, or it leaves; it never becomes valid again (a new join makes a
// new Fencing with the next epoch). Safe for concurrent use; Valid costs
// a clock read and two atomic loads.
type Fencing struct {
	// Immutable.
	epoch uint64
	base  time.Time // the deadline is kept as a monotonic offset from base
	done  chan struct{}
	onEnd func(*Fencing) // called once, by whoever ends it

	deadline atomic.Int64 // since base, in nanoseconds

	mu  sync.Mutex
	err error // why it ended; set before done is closed
}

// newFencing returns a valid Fencing of epoch until deadline.
func newFencing(epoch uint64, deadline time.Time, onEnd func(*Fencing)) *Fencing {
	f := &Fencing{epoch: epoch, base: time.Now(), done: make(chan struct{}), onEnd: onEnd}
	f.deadline.Store(int64(deadline.Sub(f.base)))
	return f
}

// notJoined is the Fencing of an agent that has not joined yet: ended.
var notJoined = func() *Fencing {
	f := &Fencing{base: time.Now(), done: make(chan struct{}), err: errNotJoined}
	close(f.done)
	return f
}()

// Epoch is the incarnation's epoch (0 before the first join): what the
// node's writes to etcd are guarded by and what records it makes carry.
func (f *Fencing) Epoch() uint64 { return f.epoch }

// Valid reports whether the node may act on cluster state under this
// epoch now: the lease deadline has not passed and nothing ended the
// Fencing. It turns false at the deadline itself, a moment before the
// deadline timer closes Done.
func (f *Fencing) Valid() bool {
	select {
	case <-f.done:
		return false
	default:
	}
	return f.remaining() > 0
}

// Done is closed when the Fencing ends.
func (f *Fencing) Done() <-chan struct{} { return f.done }

// Err says why the Fencing ended (errors.Is ErrSuperseded, ErrRemoved,
// or the lease was lost or the node left); nil until Done is closed.
func (f *Fencing) Err() error {
	select {
	case <-f.done:
	default:
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Deadline is the current lease deadline: the node must not act on
// cluster state under this epoch from then on, whatever its etcd calls
// are doing. Keep-alives move it on.
func (f *Fencing) Deadline() time.Time {
	return f.base.Add(time.Duration(f.deadline.Load()))
}

// remaining is the time left before the deadline.
func (f *Fencing) remaining() time.Duration {
	return time.Duration(f.deadline.Load()) - time.Since(f.base)
}

// extend moves the deadline to t if that is later.
func (f *Fencing) extend(t time.Time) {
	d := int64(t.Sub(f.base))
	for {
		old := f.deadline.Load()
		if d <= old || f.deadline.CompareAndSwap(old, d) {
			return
		}
	}
}

// end ends the Fencing with err and runs onEnd; it reports whether this
// call ended it (only the first does).
func (f *Fencing) end(err error) bool {
	f.mu.Lock()
	select {
	case <-f.done:
		f.mu.Unlock()
		return false
	default:
	}
	f.err = err
	close(f.done)
	f.mu.Unlock()
	if f.onEnd != nil {
		f.onEnd(f)
	}
	return true
}

// leaseMargin is how long before the lease could expire in etcd the node
// stops: its lease deadline is the time the last answered keep-alive was
// SENT plus the TTL, less this margin, which covers the time it takes to
// stop serving and clock rate differences. etcd renews a lease from when
// it receives the keep-alive, which is later than when it was sent.
func leaseMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, 100*time.Millisecond)
}

// callTimeout bounds every etcd call the agent makes: a third of the
// lease TTL. A call blocked on an etcd that does not answer thus ends
// well before the lease could expire; the fencing itself never waits for
// a call (leaseKeeper).
func callTimeout(ttl time.Duration) time.Duration { return ttl / 3 }

// leaseKeeper keeps one incarnation's lease alive and ends its Fencing at
// the lease deadline, from goroutines of its own: nothing the agent's
// loop waits for can delay the fence.
type leaseKeeper struct {
	f   *Fencing
	ttl time.Duration
	// renew sends one keep-alive and returns the TTL etcd granted;
	// rpctypes.ErrLeaseNotFound when etcd no longer knows the lease.
	renew func(ctx context.Context) (time.Duration, error)
	log   *slog.Logger
}

// start runs the keep-alive and the deadline timer until ctx ends or the
// Fencing does.
func (k *leaseKeeper) start(ctx context.Context) {
	go k.keepAlive(ctx)
	go k.fenceAtDeadline(ctx)
}

// fenceAtDeadline ends the Fencing when its deadline passes.
func (k *leaseKeeper) fenceAtDeadline(ctx context.Context) {
	t := time.NewTimer(k.f.remaining())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.f.done:
			return
		case <-t.C:
			d := k.f.remaining()
			if d <= 0 {
				k.f.end(fmt.Errorf("%w: its deadline passed with no keep-alive answered", errLeaseLost))
				return
			}
			t.Reset(d)
		}
	}
}

// keepAlive renews the lease every sixth of the TTL (sooner after a
// failure) and moves the deadline on from each answered keep-alive's
// send time.
func (k *leaseKeeper) keepAlive(ctx context.Context) {
	failing := false
	for {
		sent, granted, err := k.renewHedged(ctx)
		if ctx.Err() != nil {
			return
		}
		// A keep-alive every sixth of the TTL: after the last answered
		// one, the etcd leader may be lost (killed, partitioned) and a new
		// one elected — etcd's default election timeout is 1 s, randomised
		// up to 2 s — before the deadline, TTL - margin after that send.
		next := sent.Add(k.ttl / 6)
		switch {
		case err == nil:
			k.f.extend(sent.Add(min(granted, k.ttl) - leaseMargin(k.ttl)))
			if failing {
				k.log.Info("lease keep-alive answered again")
			}
			failing = false
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			k.f.end(fmt.Errorf("%w: etcd no longer knows it", errLeaseLost))
			return
		default:
			if !failing {
				k.log.Warn("lease keep-alive failed", "err", err, "deadline_in", k.f.remaining().Round(time.Millisecond))
			}
			failing = true
			next = time.Now().Add(k.ttl / 10)
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
		case <-k.f.done:
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil || !k.alive() {
			return
		}
	}
}

// maxHedged bounds the keep-alives one renewal has in flight.
const maxHedged = 3

// renewHedged renews the lease once: a keep-alive, and another every
// tenth of the TTL while none has been answered (at most maxHedged, each
// bounded by callTimeout), the first answer winning. The etcd client
// spreads calls over the members, so a keep-alive stuck on a member that
// cannot reach the leader (partitioned, or waiting for an election to
// end) does not hold the renewal for its whole timeout: the next one
// goes to another member, or reaches the new leader as soon as there is
// one. It returns the send time of the keep-alive answered (the lease's
// deadline counts from it), or the last error when none was.
func (k *leaseKeeper) renewHedged(ctx context.Context) (time.Time, time.Duration, error) {
	type result struct {
		sent    time.Time
		granted time.Duration
		err     error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, maxHedged)
	launch := func() {
		sent := time.Now()
		go func() {
			cctx, cancel := context.WithTimeout(ctx, callTimeout(k.ttl))
			granted, err := k.renew(cctx)
			cancel()
			results <- result{sent, granted, err}
		}()
	}
	launch()
	launched, inflight := 1, 1
	hedge := time.NewTicker(max(k.ttl/10, 10*time.Millisecond))
	defer hedge.Stop()
	var last result
	for inflight > 0 {
		select {
		case r := <-results:
			inflight--
			if r.err == nil || errors.Is(r.err, rpctypes.ErrLeaseNotFound) {
				return r.sent, r.granted, r.err
			}
			last = r
		case <-hedge.C:
			if launched < maxHedged {
				launch()
				launched++
				inflight++
			}
		}
	}
	return last.sent, last.granted, last.err
}

func (k *leaseKeeper) alive() bool {
	select {
	case <-k.f.done:
		return false
	default:
		return true
	}
}

// renewer is a leaseKeeper's renew for lease on cli.
func renewer(cli *clientv3.Client, lease clientv3.LeaseID) func(context.Context) (time.Duration, error) {
	return func(ctx context.Context) (time.Duration, error) {
		r, err := cli.KeepAliveOnce(ctx, lease)
		if err != nil {
			return 0, err
		}
		return time.Duration(r.TTL) * time.Second, nil
	}
}

// incarnation is what one join made: the lease and the Fencing of the
// epoch, and the goroutines that keep them.
type incarnation struct {
	lease   clientv3.LeaseID
	fencing *Fencing
}

var noIncarnation = &incarnation{fencing: notJoined}

// inc is the current incarnation; safe from any goroutine.
func (a *Agent) inc() *incarnation {
	if i := a.cur.Load(); i != nil {
		return i
	}
	return noIncarnation
}

// Lease returns the etcd lease of the node's current incarnation and
// whether its Fencing is valid: records the node keeps only while it is
// live go on it.
func (a *Agent) Lease() (clientv3.LeaseID, bool) {
	i := a.inc()
	return i.lease, i.fencing.Valid()
}

// Fence returns the Fencing of the node's current incarnation: what the
// node asks before it acts on cluster state ("may I, and under which
// epoch?"). A caller that acts keeps the Fencing it acted under and
// checks that one again, or waits on its Done: after a lost lease the
// agent joins again and Fence returns a new Fencing with a new epoch.
// Before the first join it returns an ended Fencing of epoch 0.
func (a *Agent) Fence() *Fencing { return a.inc().fencing }

// startIncarnation makes the incarnation a join obtained current:
// deadline is the grant's send time plus the TTL granted, less the
// margin; rev is the revision of the epoch transaction, from which the
// node's epoch is watched.
func (a *Agent) startIncarnation(lease clientv3.LeaseID, epoch uint64, deadline time.Time, rev int64) {
	ctx, cancel := context.WithCancel(a.life)
	f := newFencing(epoch, deadline, func(f *Fencing) {
		cancel()
		a.onFenced(f)
	})
	a.cur.Store(&incarnation{lease: lease, fencing: f})
	k := &leaseKeeper{f: f, ttl: a.cfg.LeaseTTL, renew: renewer(a.cli, lease), log: a.log}
	k.start(ctx)
	go a.watchEpoch(ctx, f, rev)
	if a.life.Err() != nil {
		f.end(errLeft) // Leave came first
	}
}

// FenceReason names why a Fencing ended, for metrics: "left",
// "lease_lost", "superseded", "removed" or "other".
func FenceReason(err error) string {
	switch {
	case errors.Is(err, errLeft):
		return "left"
	case errors.Is(err, errLeaseLost):
		return "lease_lost"
	case errors.Is(err, ErrSuperseded):
		return "superseded"
	case errors.Is(err, ErrRemoved):
		return "removed"
	}
	return "other"
}

// onFenced stops the node serving anything that needs cluster state: no
// new connection or session, and the existing connections end. It runs
// on whichever goroutine ended the Fencing.
func (a *Agent) onFenced(f *Fencing) {
	a.updateAdmission()
	if a.node.Addresses != nil {
		a.node.Addresses.Fenced(f.epoch)
	}
	n := 0
	err := f.Err()
	if a.node.Server != nil {
		if !errors.Is(err, errLeft) {
			a.node.Server.AbandonDurable() // other nodes take them over
		}
		n = a.node.Server.EndConnections()
	}
	if a.cfg.Fenced != nil {
		a.cfg.Fenced(err)
	}
	switch {
	case errors.Is(err, errLeft):
		a.log.Debug("fenced: left the cluster", "epoch", f.epoch, "connections_ended", n)
	case errors.Is(err, errLeaseLost):
		late := -time.Until(f.Deadline())
		a.log.Warn("fenced: lease lost, serving nothing until joined again", "epoch", f.epoch, "reason", err,
			"after_deadline", late.Round(time.Millisecond), "connections_ended", n)
	default:
		a.log.Error("fenced: serving nothing", "epoch", f.epoch, "reason", err, "connections_ended", n)
	}
}

// watchEpoch ends f as superseded the moment the node's epoch in etcd
// moves past f's, watching from rev; after a watch failure it reads the
// epoch again and watches from there, until ctx ends.
func (a *Agent) watchEpoch(ctx context.Context, f *Fencing, rev int64) {
	key := statev1.NodeEpochKey(a.cfg.Name)
	for {
		wch := a.cli.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(rev+1))
		for r := range wch {
			if r.Err() != nil {
				break
			}
			for _, ev := range r.Events {
				if err := a.checkEpoch(f, ev.Kv.Value); err != nil {
					f.end(err)
					return
				}
			}
			rev = max(rev, r.Header.Revision)
		}
		t := time.NewTimer(a.cfg.LeaseTTL / 10)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
		resp, err := a.cli.Get(cctx, key)
		cancel()
		if err != nil {
			continue // the lease deadline covers an etcd that does not answer
		}
		var v []byte
		if len(resp.Kvs) > 0 {
			v = resp.Kvs[0].Value
		}
		if err := a.checkEpoch(f, v); err != nil {
			f.end(err)
			return
		}
		rev = resp.Header.Revision
	}
}

// checkEpoch returns ErrSuperseded unless v (the value of the node's
// epoch key, nil if deleted) is still f's epoch.
func (a *Agent) checkEpoch(f *Fencing, v []byte) error {
	if string(v) == strconv.FormatUint(f.epoch, 10) {
		return nil
	}
	return fmt.Errorf("%w: node %s's epoch is now %q, this process's %d: another smbnode joined under this name",
		ErrSuperseded, a.cfg.Name, v, f.epoch)
}

// guarded runs ops in one transaction that commits only while the node's
// epoch in etcd is still the current incarnation's; every write the node
// makes goes through it. A failed guard ends the Fencing (superseded), so
// does a lease etcd no longer knows (lost).
func (a *Agent) guarded(ctx context.Context, ops ...clientv3.Op) error {
	inc := a.inc()
	f := inc.fencing
	key := statev1.NodeEpochKey(a.cfg.Name)
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	resp, err := a.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.Value(key), "=", strconv.FormatUint(f.epoch, 10))).
		Then(ops...).
		Else(clientv3.OpGet(key)).
		Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		err = fmt.Errorf("%w: etcd no longer knows it", errLeaseLost)
		f.end(err)
		return err
	}
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		var v []byte
		if rr := resp.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			v = rr.Kvs[0].Value
		}
		err := a.checkEpoch(f, v)
		if err == nil { // cannot be: the guard compared that value
			err = fmt.Errorf("%w: the epoch guard failed", ErrSuperseded)
		}
		f.end(err)
		return err
	}
	return nil
}
