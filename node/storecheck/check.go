package storecheck

import (
	"context"
	"log/slog"
	"strings"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Config configures a Checker.
type Config struct {
	Client *clientv3.Client
	// Node is this node's name.
	Node string
	// Lease returns the lease of the node's current incarnation, and
	// whether it is valid; the check's records live on it.
	Lease func() (clientv3.LeaseID, bool)
	// Interval is the time between two rounds of a node's probe once
	// every pair is decided (default DefaultInterval).
	Interval time.Duration
	Log      *slog.Logger
}

// DefaultInterval is the default Config.Interval.
const DefaultInterval = 30 * time.Second

const (
	// tick paces a share's loop: lease changes, rounds due, pending pairs.
	tick = 250 * time.Millisecond
	// stuckBound is how long a round waits for a checker's verdict before
	// the next round goes on without it.
	stuckBound = 10 * time.Second
	// callTimeout bounds one etcd call.
	callTimeout = 5 * time.Second
)

// Checker runs the storage checks of a node's shares.
type Checker struct{ cfg Config }

// New returns a Checker.
func New(cfg Config) *Checker {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Checker{cfg: cfg}
}

// Watch checks the share name rooted at root (on this node's mount),
// whose files the node keys with volume, until stop is called: changed
// gets every new View, from the check's goroutine, the first at once.
// stop returns once the node's probe files and records are gone.
func (c *Checker) Watch(name, root string, volume uint64, changed func(View)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shareCheck{c: c, name: name, root: root, volume: volume, changed: changed,
		probes: map[string]*statev1.StorageProbeRecord{}, since: map[string]time.Time{}, peers: map[string]*peer{},
		mine: map[string]*statev1.StorageVerdictRecord{}, theirs: map[string]*statev1.StorageVerdictRecord{},
		live: map[string]time.Time{}}
	s.setView(View{State: Checking, Reason: "checking the storage", ZeroCopy: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// shareCheck is one share's check; owned by its goroutine.
type shareCheck struct {
	c       *Checker
	name    string
	root    string
	volume  uint64
	changed func(View)

	d        *dir
	pr       *prober
	probeErr error
	probe    *statev1.StorageProbeRecord // this node's latest round, published
	roundAt  time.Time
	// burst: the next round follows as soon as every checker answered,
	// so that a periodic round is checked against one the checkers read
	// and cached just before (caches that expire in seconds show then).
	burst bool

	probes map[string]*statev1.StorageProbeRecord   // the other nodes' latest rounds
	since  map[string]time.Time                     // when each appeared
	live   map[string]time.Time                     // the other live nodes, since when
	peers  map[string]*peer                         // what this node keeps of each
	mine   map[string]*statev1.StorageVerdictRecord // this node's verdicts on them
	theirs map[string]*statev1.StorageVerdictRecord // theirs on this node's probe

	hint string // the fix known for the share's filesystem, for a refusal
	// cacheStale: a page-cache read (sendfile, RWF_NOWAIT) here was seen
	// stale; the share is read without them from then on.
	cacheStale bool
	view       View
	lease      clientv3.LeaseID // the lease the records were put with
}

func (s *shareCheck) log() *slog.Logger { return s.c.cfg.Log.With("share", s.name) }

// run checks the share until ctx ends, then removes the node's probe
// files and records.
func (s *shareCheck) run(ctx context.Context) {
	s.hint = hint(s.root)
	d, err := openDir(s.root)
	if err != nil {
		s.probeErr = err
	} else {
		s.d, s.pr = d, newProber(d, s.c.cfg.Node)
	}
	defer s.cleanup()
	for ctx.Err() == nil {
		if err := s.follow(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("storage check: following etcd", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// follow loads the share's probes and verdicts and follows them until
// ctx ends or a watch fails.
func (s *shareCheck) follow(ctx context.Context) error {
	cli := s.c.cfg.Client
	gctx, cancel := context.WithTimeout(ctx, callTimeout)
	resp, err := cli.Txn(gctx).Then(
		clientv3.OpGet(s.probesPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(s.verdictsPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(statev1.LivePrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	cancel()
	if err != nil {
		return err
	}
	for node, p := range s.peers {
		p.close()
		delete(s.peers, node)
	}
	clear(s.probes)
	clear(s.theirs)
	live := map[string]bool{}
	for _, kv := range resp.Responses[2].GetResponseRange().GetKvs() {
		live[statev1.LastKeyPart(string(kv.Key))] = true
	}
	for node := range s.live {
		if !live[node] {
			delete(s.live, node)
		}
	}
	for node := range live {
		s.onLive(node, true)
	}
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		s.onVerdict(ctx, string(kv.Key), kv.Value)
	}
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		s.onProbe(ctx, string(kv.Key), kv.Value)
	}
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	rev := resp.Header.Revision + 1
	probes := cli.Watch(wctx, s.probesPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev))
	verdicts := cli.Watch(wctx, s.verdictsPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev))
	lives := cli.Watch(wctx, statev1.LivePrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(rev))
	t := time.NewTicker(tick)
	defer t.Stop()
	s.step(ctx)
	for {
		var w clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.step(ctx)
			continue
		case w, ok = <-probes:
			if err := watchErr(w, ok); err != nil {
				return err
			}
			for _, ev := range w.Events {
				s.onProbe(ctx, string(ev.Kv.Key), eventValue(ev))
			}
		case w, ok = <-verdicts:
			if err := watchErr(w, ok); err != nil {
				return err
			}
			for _, ev := range w.Events {
				s.onVerdict(ctx, string(ev.Kv.Key), eventValue(ev))
			}
		case w, ok = <-lives:
			if err := watchErr(w, ok); err != nil {
				return err
			}
			for _, ev := range w.Events {
				s.onLive(statev1.LastKeyPart(string(ev.Kv.Key)), ev.Type != clientv3.EventTypeDelete)
			}
		}
		s.step(ctx)
	}
}

func watchErr(w clientv3.WatchResponse, ok bool) error {
	if !ok {
		return context.Canceled
	}
	return w.Err()
}

func eventValue(ev *clientv3.Event) []byte {
	if ev.Type == clientv3.EventTypeDelete {
		return nil
	}
	return ev.Kv.Value
}

// onLive records that node is live (or no longer). Every live node serves
// every share of the cluster: until its probe shows, a node that does
// not serve the share yet waits for it (Decide's pending pairs).
func (s *shareCheck) onLive(node string, live bool) {
	if node == s.self() {
		return
	}
	if !live {
		delete(s.live, node)
		return
	}
	if _, ok := s.live[node]; !ok {
		s.live[node] = time.Now()
	}
}

func (s *shareCheck) probesPrefix() string { return statev1.StorageProbeKey(s.name, "") }
func (s *shareCheck) verdictsPrefix() string {
	return statev1.StorageVerdictsPrefix + strings.ToLower(s.name) + "/"
}

func (s *shareCheck) self() string { return strings.ToLower(s.c.cfg.Node) }

// onProbe applies another node's probe round (nil value: it stopped
// probing) and checks it through this node's mount.
func (s *shareCheck) onProbe(ctx context.Context, key string, value []byte) {
	node := statev1.LastKeyPart(key)
	if node == s.self() {
		return
	}
	if value == nil {
		s.forget(ctx, node)
		return
	}
	rec := &statev1.StorageProbeRecord{}
	if err := proto.Unmarshal(value, rec); err != nil {
		s.log().Warn("ignoring a storage probe record that does not decode", "key", key, "err", err)
		return
	}
	s.probes[node] = rec
	if _, ok := s.since[node]; !ok {
		s.since[node] = time.Now()
	}
	if s.d == nil || rec.Name == "" {
		return // a round announced, its files being changed (nextRound)
	}
	p := s.peers[node]
	if p == nil {
		p = newPeer()
		s.peers[node] = p
	}
	v := &statev1.StorageVerdictRecord{Round: rec.Round, Ok: true}
	switch {
	case rec.VolumeId != s.volume:
		v.Ok, v.Reason = false, "the nodes key the share's files with different volume ids (their share records differ)"
	default:
		stale, err := s.checkPeer(p, rec)
		if err != nil && s.superseded(ctx, key, rec.Round) {
			return // the prober went on meanwhile: its next round is checked instead
		}
		p.fail(rec, err)
		// Once stale through the page cache, always: a round that reads
		// it fresh says nothing of the next READ.
		s.cacheStale = s.cacheStale || stale
		v.CacheStale = s.cacheStale
		if err != nil {
			v.Ok, v.Reason = false, err.Error()
		}
	}
	if v.Ok {
		v.RoundsOk = p.roundsOK + 1
	}
	p.roundsOK = v.RoundsOk
	if !v.Ok && (s.mine[node] == nil || s.mine[node].Ok) {
		s.log().Warn("storage check failed", "prober", node, "round", rec.Round, "reason", v.Reason)
	}
	s.mine[node] = v
	s.put(ctx, statev1.StorageVerdictKey(s.name, s.self(), node), v)
}

// checkPeer checks rec through the share's root as it is now (opened
// afresh: it may have been replaced under the node).
func (s *shareCheck) checkPeer(p *peer, rec *statev1.StorageProbeRecord) (bool, error) {
	d, err := openDir(s.root)
	if err != nil {
		return false, err
	}
	defer d.close()
	return p.check(d, rec)
}

// superseded reports whether the prober's record at key is past round,
// or gone — or cannot be read: a finding stands only once the round is
// known to be the prober's current one. A watch that delivers rounds
// late (its etcd member cut off from the others: a partition) shows a
// round whose files the prober has already renamed and deleted; read
// then, they are missing, which says nothing of the storage. The read is
// tried on up to three members (the client spreads calls over them);
// if none answers, the round is left unjudged and the next one checked.
func (s *shareCheck) superseded(ctx context.Context, key string, round uint64) bool {
	var resp *clientv3.GetResponse
	var err error
	for range 3 {
		gctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err = s.c.cfg.Client.Get(gctx, key)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		s.log().Warn("storage check: a round's finding left unjudged, its record cannot be read", "key", key, "round", round, "err", err)
		return true
	}
	if len(resp.Kvs) == 0 {
		return true
	}
	rec := &statev1.StorageProbeRecord{}
	return proto.Unmarshal(resp.Kvs[0].Value, rec) == nil && rec.Round != round
}

// forget drops what this node holds of a node that stopped probing.
func (s *shareCheck) forget(ctx context.Context, node string) {
	delete(s.probes, node)
	delete(s.since, node)
	delete(s.theirs, node)
	if p := s.peers[node]; p != nil {
		p.close()
		delete(s.peers, node)
	}
	if s.mine[node] != nil {
		delete(s.mine, node)
		s.del(ctx, statev1.StorageVerdictKey(s.name, s.self(), node), false)
	}
}

// onVerdict applies another node's verdict on this node's probe.
func (s *shareCheck) onVerdict(ctx context.Context, key string, value []byte) {
	rest := strings.TrimPrefix(key, s.verdictsPrefix())
	checker, prober, ok := strings.Cut(rest, "/")
	if !ok || prober != s.self() || checker == s.self() {
		return
	}
	if value == nil {
		delete(s.theirs, checker)
		return
	}
	rec := &statev1.StorageVerdictRecord{}
	if err := proto.Unmarshal(value, rec); err != nil {
		s.log().Warn("ignoring a storage verdict record that does not decode", "key", key, "err", err)
		return
	}
	s.theirs[checker] = rec
}

// step publishes again under a new lease, runs a round when one is due
// and decides how the node serves the share.
func (s *shareCheck) step(ctx context.Context) {
	lease, valid := s.c.cfg.Lease()
	if !valid {
		return
	}
	now := time.Now()
	if lease != s.lease {
		s.lease = lease
		if s.probe != nil { // the round as it stands, under the new incarnation
			s.put(ctx, statev1.StorageProbeKey(s.name, s.self()), s.probe)
		}
		for node, v := range s.mine {
			s.put(ctx, statev1.StorageVerdictKey(s.name, s.self(), node), v)
		}
		s.putView(ctx)
	}
	if s.pr != nil && s.probeErr == nil && s.roundDue(now) {
		s.nextRound(ctx, now)
	}
	pairs := make(map[string]Pair, len(s.probes)+len(s.live))
	for node := range s.probes {
		pairs[node] = Pair{Mine: s.mine[node], Theirs: s.theirs[node], Since: s.since[node]}
	}
	for node, since := range s.live {
		if _, ok := pairs[node]; !ok {
			pairs[node] = Pair{Since: since}
		}
	}
	v := Decide(pairs, s.view.State == Serving, s.probeErr, now)
	if v.State == Refused && s.probeErr == nil {
		v.Reason += s.hint
	}
	if v != s.view {
		switch {
		case (v.State == Serving) != (s.view.State == Serving), v.ZeroCopy != s.view.ZeroCopy:
			s.log().Info("storage check", "state", v.State, "reason", v.Reason, "zero_copy", v.ZeroCopy)
		case v.State != s.view.State: // refused ↔ checking as a refused node checks a new probe file
			s.log().Debug("storage check", "state", v.State, "reason", v.Reason)
		}
		s.setView(v)
		s.putView(ctx)
	}
}

// roundDue reports whether this node's next probe round is due: the first,
// one every checker answered while a pair still needs rounds, one whose
// answers are late, and the periodic one.
func (s *shareCheck) roundDue(now time.Time) bool {
	if s.probe == nil {
		return true
	}
	age := now.Sub(s.roundAt)
	more := s.burst
	for node := range s.probes {
		t := s.theirs[node]
		if t == nil || t.Round < s.probe.Round {
			// A round never overtakes a checker still reading the last
			// one (it would see the next round's file and report the
			// last one stale), unless the checker is stuck.
			if age < stuckBound {
				return false
			}
			continue
		}
		if t.Ok && t.RoundsOk < RoundsToDecide {
			more = true
		}
	}
	return more || age >= s.c.cfg.Interval
}

// refusedBy reports whether a checker found this node's current probe
// round wrong.
func (s *shareCheck) refusedBy() bool {
	for node := range s.probes {
		if t := s.theirs[node]; t != nil && s.probe != nil && t.Round == s.probe.Round && !t.Ok {
			return true
		}
	}
	return false
}

// nextRound probes the share once more and publishes the round.
func (s *shareCheck) nextRound(ctx context.Context, now time.Time) {
	if s.probe != nil {
		// Announce the round before touching its files: a checker that
		// finds the files changed under its reading of the last round
		// then sees, in etcd, that the prober went on (superseded), and
		// does not take the change for a stale view of the storage.
		next := &statev1.StorageProbeRecord{Round: s.probe.Round + 1, Path: s.root, VolumeId: s.volume}
		if !s.put(ctx, statev1.StorageProbeKey(s.name, s.self()), next) {
			return
		}
	}
	if s.refusedBy() {
		// A checker's failure stands for the probe file's life: a new
		// file is checked afresh (the failure may have come from the
		// probe files being removed under the nodes), and refused again
		// within its first rounds where the storage is at fault.
		s.pr.remove()
		s.pr = newProber(s.d, s.c.cfg.Node)
	}
	rec, err := s.pr.next()
	if err != nil {
		// The probe directory or file may have been removed under the
		// node (by hand on the storage): start over with new ones once.
		s.log().Warn("storage check: probing again from a new probe file", "err", err)
		s.pr.remove()
		s.d.close()
		if s.d, err = openDir(s.root); err == nil {
			s.pr = newProber(s.d, s.c.cfg.Node)
			rec, err = s.pr.next()
		} else {
			s.d, s.pr = nil, nil
		}
	}
	if err != nil {
		s.probeErr = err
		s.log().Warn("storage check: cannot probe the share through this node's mount", "err", err)
		return
	}
	rec.Path, rec.VolumeId = s.root, s.volume
	s.burst = s.probe != nil && now.Sub(s.roundAt) >= s.c.cfg.Interval
	s.probe, s.roundAt = rec, now
	s.put(ctx, statev1.StorageProbeKey(s.name, s.self()), rec)
}

func (s *shareCheck) setView(v View) {
	s.view = v
	s.changed(v)
}

func (s *shareCheck) putView(ctx context.Context) {
	s.put(ctx, statev1.ShareViewKey(s.name, s.self()), &statev1.ShareViewRecord{
		State: s.view.State, Reason: s.view.Reason, Since: timestamppb.Now(), ZeroCopy: s.view.ZeroCopy,
	})
}

// put writes a record of the node on its lease; it reports whether it
// did.
func (s *shareCheck) put(ctx context.Context, key string, m proto.Message) bool {
	if s.lease == 0 {
		return false
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := s.c.cfg.Client.Put(pctx, key, string(b), clientv3.WithLease(s.lease)); err != nil {
		if ctx.Err() == nil {
			s.log().Warn("storage check: writing a record", "key", key, "err", err)
		}
		return false
	}
	return true
}

func (s *shareCheck) del(ctx context.Context, key string, prefix bool) {
	dctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var opts []clientv3.OpOption
	if prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	s.c.cfg.Client.Delete(dctx, key, opts...)
}

// cleanup removes the node's records and probe files of the share.
func (s *shareCheck) cleanup() {
	ctx := context.Background()
	if s.lease != 0 {
		s.del(ctx, statev1.StorageProbeKey(s.name, s.self()), false)
		s.del(ctx, statev1.StorageVerdictKey(s.name, s.self(), ""), true)
		s.del(ctx, statev1.ShareViewKey(s.name, s.self()), false)
	}
	for _, p := range s.peers {
		p.close()
	}
	if s.pr != nil {
		s.pr.remove()
	}
	if s.d != nil {
		s.d.close()
	}
}
