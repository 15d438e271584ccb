package robustness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// RequestBound is the longest a client waits for any one answer: past it
// the request counts as unanswered (a violation) and the client drops
// the connection. It is above what the cluster promises under the
// nemesis's faults: an open answered within the peer call timeout
// (10 s), a close within twice that, a stopped node fenced within its
// lease TTL.
const RequestBound = 30 * time.Second

// dialBound bounds one connection's NEGOTIATE, SESSION_SETUP and
// TREE_CONNECT; a node that does not log on within it is skipped.
const dialBound = 10 * time.Second

// Access masks and share modes of the workload's opens ([MS-SMB2]
// 2.2.13.1.1, 2.2.13).
const (
	accessReadWrite = 0x0012019F // FILE_GENERIC_READ | FILE_GENERIC_WRITE
	accessRead      = 0x00120089 // FILE_GENERIC_READ
	shareNone       = 0
	shareRead       = 0x1
	shareAll        = 0x7
)

// Sizes of the values in the files: a register's value is a fixed-length
// string, so that every write replaces the whole of it; a counter is a
// decimal number of fixed width.
const (
	registerSize = 13 // "c%02d-%09d"
	counterSize  = 20
)

// Config is a workload.
type Config struct {
	Addrs    []string // the nodes' public addresses, host:port
	Share    string
	User     string
	Password string
	Clients  int
	Seed     uint64
	// Prefix starts every file name (one run's files are its own).
	Prefix    string
	Registers int
	Counters  int
	Holds     int // files opened by share mode
	// Names are the names files are published at by rename and deleted.
	Names int
	// CAShare, if set, is a share with continuous availability that the
	// durable operations open persistent handles on (half of them).
	CAShare string
	// Multichannel is how many of the clients (the last ones) bind a
	// second channel on another node to each session.
	Multichannel int
}

// Workload is clients running operations until stopped.
type Workload struct {
	cfg  Config
	hist *History

	stop chan struct{}
	wg   sync.WaitGroup
}

// Start starts cfg.Clients clients, recording into hist.
func Start(cfg Config, hist *History) *Workload {
	w := &Workload{cfg: cfg, hist: hist, stop: make(chan struct{})}
	for id := range cfg.Clients {
		w.wg.Add(1)
		go w.client(id)
	}
	return w
}

// Stop stops the clients and waits until each has ended its operation
// (at most RequestBound a request) and closed its connection.
func (w *Workload) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *Workload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// pause waits d, or less if the workload stops.
func (w *Workload) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.stop:
	}
}

func (w *Workload) register(i int) string  { return w.cfg.Prefix + "reg-" + strconv.Itoa(i) }
func (w *Workload) counter(i int) string   { return w.cfg.Prefix + "cnt-" + strconv.Itoa(i) }
func (w *Workload) holdFile(i int) string  { return w.cfg.Prefix + "hold-" + strconv.Itoa(i) }
func (w *Workload) name(i int) string      { return w.cfg.Prefix + "name-" + strconv.Itoa(i) }
func (w *Workload) chanFile(id int) string { return w.cfg.Prefix + "chan-" + strconv.Itoa(id) }

// client runs operations one after another, each connection on the next
// node's address, a new one when the last was lost.
func (w *Workload) client(id int) {
	defer w.wg.Done()
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(id)+1))
	// The channel each request goes through is drawn from a generator
	// of its own: whether a client has a second channel depends on the
	// timing, and the operations' choices must not.
	chanRng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(id)+1<<32))
	multi := id >= w.cfg.Clients-w.cfg.Multichannel
	next := id % len(w.cfg.Addrs)
	var l *link
	defer func() {
		if l != nil {
			l.close()
		}
	}()
	seq := 0
	for !w.stopped() {
		if l == nil {
			node := next
			next = (next + 1) % len(w.cfg.Addrs)
			var err error
			// A session with two channels is signed, as binding needs.
			if l, err = w.dialAs(node, w.cfg.Share, [16]byte{}, multi); err != nil {
				w.pause(200 * time.Millisecond)
				continue
			}
			l.rng = chanRng
			if multi {
				w.bind(l, next)
				if l.c.Err() != nil { // the bind outlasted its bound
					l.close()
					l = nil
					continue
				}
			}
		}
		seq++
		ops, alive := w.one(l, id, seq, rng)
		for _, o := range ops {
			w.hist.Add(o)
		}
		if !alive {
			l.close()
			l = nil
			w.pause(50 * time.Millisecond)
		}
	}
}

// one runs one operation, chosen at random, as client id's seq-th, and
// returns it (or, for a write and read through two channels, the two)
// and whether the connection lives.
func (w *Workload) one(l *link, id, seq int, rng *rand.Rand) ([]Op, bool) {
	o := Op{Client: id, Node: l.node, Node2: l.node2()}
	var alive bool
	value := func() string { return fmt.Sprintf("c%02d-%09d", id, seq) }
	switch p := rng.IntN(100); {
	case p < 13:
		o.Kind, o.File = RegWrite, w.register(rng.IntN(w.cfg.Registers))
		o.Value = fmt.Sprintf("c%02d-%09d", id, seq)
		alive = w.regWrite(l, &o)
	case p < 22:
		o.Kind, o.File, o.Cached = RegWrite, w.register(rng.IntN(w.cfg.Registers)), true
		o.Value = fmt.Sprintf("c%02d-%09d", id, seq)
		var key [16]byte // the client's ClientGuid is its connection's: the key need only be new
		binary.LittleEndian.PutUint64(key[:], w.cfg.Seed)
		binary.LittleEndian.PutUint32(key[8:], uint32(id))
		binary.LittleEndian.PutUint32(key[12:], uint32(seq))
		alive = w.cachedWrite(l, &o, key, time.Duration(5+rng.IntN(35))*time.Millisecond)
	case p < 44:
		o.Kind, o.File = RegRead, w.register(rng.IntN(w.cfg.Registers))
		alive = w.regRead(l, &o)
	case p < 66:
		o.Kind, o.File = Increment, w.counter(rng.IntN(w.cfg.Counters))
		alive = w.increment(l, &o)
	case p < 87:
		o.Kind, o.File, o.Excl = Hold, w.holdFile(rng.IntN(w.cfg.Holds)), rng.IntN(2) == 0
		alive = w.hold(l, &o, time.Duration(5+rng.IntN(35))*time.Millisecond)
	case p < 90:
		o.Kind, o.File = Durable, fmt.Sprintf("%sdur-%d-%d", w.cfg.Prefix, id, seq)
		persistent := rng.IntN(2) == 0 && w.cfg.CAShare != ""
		alive = w.durable(l, &o, id, seq, persistent)
	case p < 92:
		o.Kind, o.File, o.Value = Publish, w.name(rng.IntN(w.cfg.Names)), value()
		o.Temp = fmt.Sprintf("%stmp-%d-%d", w.cfg.Prefix, id, seq)
		alive = w.publish(l, &o)
	case p < 93:
		o.Kind, o.File = Delete, w.name(rng.IntN(w.cfg.Names))
		alive = w.delete(l, &o)
	case p < 95:
		o.Kind, o.File = NameRead, w.name(rng.IntN(w.cfg.Names))
		alive = w.nameRead(l, &o)
	default:
		o.Kind, o.File, o.Value = ChanWrite, w.chanFile(id), value()
		return w.chanRW(l, o)
	}
	return []Op{o}, alive
}

// errRequestBound ends a connection whose request went unanswered for
// RequestBound.
var errRequestBound = errors.New("robustness: no answer within the request bound")

// link is a client's connection to one node, and the channel it bound
// on another, if any.
type link struct {
	c      *smbc.Conn
	node   int
	ctx    context.Context
	cancel context.CancelCauseFunc
	dead   bool // a request failed with no NTSTATUS: the connection is gone

	// chans are the session's channels, c first; nodes their nodes.
	chans []*smbc.Conn
	nodes []int
	rng   *rand.Rand // picks a request's channel; nil: always c
}

// dial logs on through node's address.
func (w *Workload) dial(node int) (*link, error) {
	return w.dialAs(node, w.cfg.Share, [16]byte{}, false)
}

// dialAs logs on through node's address to share with the ClientGuid
// guid (zero: a random one), signed if sign is set.
func (w *Workload) dialAs(node int, share string, guid [16]byte, sign bool) (*link, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t := time.AfterFunc(dialBound, func() { cancel(errRequestBound) })
	c, err := smbc.Dial(ctx, smbc.Options{Addr: w.cfg.Addrs[node], Share: share, User: w.cfg.User,
		Password: w.cfg.Password, Dialect: smb2.Dialect311, Credits: 64, ClientGUID: guid, Sign: sign})
	t.Stop()
	if err != nil {
		cancel(err)
		return nil, err
	}
	return &link{c: c, node: node, ctx: ctx, cancel: cancel, chans: []*smbc.Conn{c}, nodes: []int{node}}, nil
}

// bind binds a second channel of l's session on node's address (the
// next node's), unless that is l's own; a bind refused leaves l with one
// channel. The channel ends with l (its context is l's); a bind not done
// within dialBound ends l.
func (w *Workload) bind(l *link, node int) {
	if node == l.node {
		return
	}
	t := time.AfterFunc(dialBound, func() { l.cancel(errRequestBound) })
	ch, err := l.c.Bind(l.ctx, w.cfg.Addrs[node])
	t.Stop()
	if err != nil {
		return
	}
	l.chans = append(l.chans, ch)
	l.nodes = append(l.nodes, node)
}

// node2 is the node of l's second channel, -1 if it has one.
func (l *link) node2() int {
	if len(l.nodes) < 2 {
		return -1
	}
	return l.nodes[1]
}

// pick is the channel for the next request: either of the session's, at
// random.
func (l *link) pick() *smbc.Conn {
	if len(l.chans) < 2 || l.rng == nil {
		return l.c
	}
	return l.chans[l.rng.IntN(len(l.chans))]
}

// on is f used through the next request's channel.
func (l *link) on(f *smbc.File) *smbc.File {
	if len(l.chans) < 2 {
		return f
	}
	return f.On(l.pick())
}

// close ends the connection at once: no TREE_DISCONNECT or LOGOFF, which
// a lost node would not answer.
func (l *link) close() {
	l.cancel(smbc.ErrClosed)
	// The cancel fails the connections from a goroutine of its own:
	// Close before that would still send TREE_DISCONNECT and LOGOFF,
	// and a LOGOFF closes the session's durable opens.
	for _, c := range l.chans {
		for range 1000 {
			if c.Err() != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, c := range l.chans[1:] {
		c.Close()
	}
	l.c.Close()
}

// expected are the refusals the workload's operations meet in their
// normal course; after any other status the client logs on again
// (through the next node), as a client whose session or tree was lost
// would.
var expected = map[smb2.Status]bool{
	smb2.StatusObjectNameNotFound: true, // a name deleted (Delete, NameRead)
	smb2.StatusDeletePending:      true,
	smb2.StatusSharingViolation:   true,
	smb2.StatusLockNotGranted:     true,
	smb2.StatusFileLockConflict:   true,
}

// step runs one request under the request bound and records in o how it
// failed: an NTSTATUS answer leaves the connection usable; anything else
// (connection lost, the bound passed) ends it.
func (l *link) step(o *Op, f func() error) error {
	t := time.AfterFunc(RequestBound, func() { l.cancel(errRequestBound) })
	err := f()
	t.Stop()
	if err == nil {
		return nil
	}
	if o.Err == "" {
		o.Err = shortErr(err)
	}
	var se *smbc.StatusError
	if !errors.As(err, &se) || !expected[se.Status] {
		l.dead = true
	}
	if errors.Is(err, errRequestBound) {
		o.TimedOut = true
	}
	return err
}

// shortErr is err without the client's prefixes of file names.
func shortErr(err error) string {
	var se *smbc.StatusError
	if errors.As(err, &se) {
		return se.Status.String()
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// finish closes f (its outcome does not change o's, but its answer is
// bounded like any other) and returns whether the connection lives.
func (w *Workload) finish(l *link, o *Op, f *smbc.File) bool {
	w.after(l, o, "close", l.on(f).Close)
	return !l.dead
}

// after runs a request that does not change o's outcome, noting in
// o.After how it failed.
func (w *Workload) after(l *link, o *Op, what string, f func() error) {
	var scratch Op
	if l.step(&scratch, f) == nil {
		return
	}
	o.TimedOut = o.TimedOut || scratch.TimedOut
	if o.After != "" {
		o.After += "; "
	}
	o.After += what + ": " + scratch.Err
}

// regWrite writes o.Value over the register: open, WRITE, close. The
// write is known done at its answer.
func (w *Workload) regWrite(l *link, o *Op) bool {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenMode(o.File, accessReadWrite, shareAll, true); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return !l.dead
	}
	err := l.step(o, func() error { _, err := l.on(f).WriteAt([]byte(o.Value), 0); return err })
	o.Return, o.Outcome = w.hist.Now(), OK
	if err != nil {
		o.Outcome = Unknown
	}
	return w.finish(l, o, f)
}

// cachedWrite writes o.Value over the register as a client with a write
// cache does: it opens the file asking for a read-write-handle lease and,
// granted a write lease, counts the write done at once — its value held
// in the cache, its outcome ok from then on ([MS-SMB2] 3.2.4.3.4: the
// client need not send it) — and sends it only when the lease breaks
// (another client's open) or after hold, then acknowledges the break and
// closes. The server must not let the other open go on before the break
// is acknowledged: a read after it must see the value. Without a write
// lease the write is an ordinary one. A flush that fails leaves the
// outcome unknown (a cached write may be lost with its connection).
func (w *Workload) cachedWrite(l *link, o *Op, key [16]byte, hold time.Duration) bool {
	drainBreaks(l) // of earlier operations' leases, long closed
	o.Call = w.hist.Now()
	var f *smbc.File
	var granted uint32
	if err := l.step(o, func() (err error) {
		f, granted, err = l.c.OpenLease(o.File, key, smb2.LeaseRead|smb2.LeaseHandle|smb2.LeaseWrite)
		return
	}); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return !l.dead
	}
	if granted&smb2.LeaseWrite == 0 {
		o.Cached = false
		err := l.step(o, func() error { _, err := l.on(f).WriteAt([]byte(o.Value), 0); return err })
		o.Return, o.Outcome = w.hist.Now(), OK
		if err != nil {
			o.Outcome = Unknown
		}
		return w.finish(l, o, f)
	}
	o.Return, o.Outcome = w.hist.Now(), OK // in the cache: done, as far as the application knows
	brk, broke := w.awaitBreak(l, key, hold)
	if err := l.step(o, func() error { _, err := l.on(f).WriteAt([]byte(o.Value), 0); return err }); err != nil {
		o.Outcome = Unknown
		return !l.dead
	}
	if broke && brk.AckRequired {
		w.after(l, o, "lease break ack", func() error { return l.c.AckLeaseBreak(key, brk.New) })
	}
	return w.finish(l, o, f)
}

// drainBreaks drops the break notifications l's channels have kept.
func drainBreaks(l *link) {
	for _, c := range l.chans {
	drain:
		for {
			select {
			case <-c.Breaks():
			default:
				break drain
			}
		}
	}
}

// awaitBreak waits up to hold for a break of the lease key (breaks of
// earlier operations' leases are passed over), on any of l's channels:
// the server sends a break on a channel of the session it chooses.
func (w *Workload) awaitBreak(l *link, key [16]byte, hold time.Duration) (smbc.Break, bool) {
	t := time.NewTimer(hold)
	defer t.Stop()
	var second <-chan smbc.Break // nil, never ready, with one channel
	if len(l.chans) > 1 {
		second = l.chans[1].Breaks()
	}
	for {
		var b smbc.Break
		select {
		case b = <-l.c.Breaks():
		case b = <-second:
		case <-t.C:
			return smbc.Break{}, false
		case <-w.stop:
			return smbc.Break{}, false
		}
		if b.Lease && b.Key == key && b.New&smb2.LeaseWrite == 0 {
			return b, true
		}
	}
}

// regRead reads the register: open, READ, close.
func (w *Workload) regRead(l *link, o *Op) bool {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenMode(o.File, accessRead, shareAll, true); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return !l.dead
	}
	buf := make([]byte, registerSize)
	var n int
	err := l.step(o, func() error { return readAt(l.on(f), buf, &n) })
	o.Return, o.Outcome, o.Value = w.hist.Now(), OK, string(buf[:n])
	if err != nil {
		o.Outcome = Failed
	}
	return w.finish(l, o, f)
}

// increment adds one to the counter under an exclusive byte-range lock of
// its bytes: LOCK (failing at once if taken), READ, WRITE, UNLOCK, close.
// A lock not granted fails the operation; a WRITE without a success
// answer leaves its outcome unknown.
func (w *Workload) increment(l *link, o *Op) bool {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenMode(o.File, accessReadWrite, shareAll, true); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return !l.dead
	}
	if err := l.step(o, func() error { return l.on(f).Lock(0, counterSize, true) }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return w.finish(l, o, f)
	}
	buf := make([]byte, counterSize)
	var n int
	err := l.step(o, func() error { return readAt(l.on(f), buf, &n) })
	if err == nil {
		if o.Count, err = parseCounter(buf[:n]); err != nil {
			o.Err = err.Error()
		}
	}
	if err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		w.after(l, o, "unlock", func() error { return l.on(f).Unlock(0, counterSize) })
		return w.finish(l, o, f)
	}
	werr := l.step(o, func() error {
		_, err := l.on(f).WriteAt([]byte(fmt.Sprintf("%0*d", counterSize, o.Count+1)), 0)
		return err
	})
	o.Return, o.Outcome = w.hist.Now(), OK
	if werr != nil {
		o.Outcome = Unknown
	}
	if !l.dead {
		w.after(l, o, "unlock", func() error { return l.on(f).Unlock(0, counterSize) })
	}
	return w.finish(l, o, f)
}

// readAt reads the start of f into buf, the count read into n; a file
// shorter than buf (io.EOF) is no error.
func readAt(f *smbc.File, buf []byte, n *int) error {
	var err error
	*n, err = f.ReadAt(buf, 0)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// parseCounter reads a counter's bytes; an empty file is 0.
func parseCounter(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || len(b) != counterSize {
		return 0, fmt.Errorf("counter reads %q", b)
	}
	return v, nil
}

// hold opens the file by share mode — exclusive: read and write, sharing
// nothing; else read, sharing read — holds it for d, reading it once, and
// closes it. The open was held from its answer to the close's request
// if the close succeeds.
func (w *Workload) hold(l *link, o *Op, d time.Duration) bool {
	access, share := uint32(accessRead), uint32(shareRead)
	if o.Excl {
		access, share = accessReadWrite, shareNone
	}
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenMode(o.File, access, share, true); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return !l.dead
	}
	o.From = w.hist.Now()
	w.pause(d)
	var n int
	l.step(o, func() error { return readAt(l.on(f), make([]byte, 1), &n) })
	o.To = w.hist.Now()
	err := l.step(o, l.on(f).Close)
	o.Return, o.Outcome, o.Held = w.hist.Now(), OK, err == nil
	return !l.dead
}

// FinalReads reads every counter through node's address after the run
// and adds the reads to the history. A counter still locked
// (STATUS_FILE_LOCK_CONFLICT) is read again until RecoverBound has
// passed; then its read goes into the history failed, for the checker to
// report: every client has closed its opens, so no lock may be left.
func (w *Workload) FinalReads(node int) error {
	l, err := w.dial(node)
	if err != nil {
		return err
	}
	defer func() { l.close() }()
	for i := range w.cfg.Counters {
		o := Op{Client: -1, Node: node, Kind: FinalRead, File: w.counter(i), Call: w.hist.Now()}
		deadline := time.Now().Add(RecoverBound)
		for {
			err := w.finalRead(l, &o)
			if err == nil {
				o.Outcome, o.Err = OK, ""
				break
			}
			if l.dead {
				return err
			}
			var se *smbc.StatusError
			if !errors.As(err, &se) || se.Status != smb2.StatusFileLockConflict || time.Now().After(deadline) {
				o.Outcome = Failed
				o.Err = fmt.Sprintf("%s, %v after the run", shortErr(err), ms(w.hist.Now()-o.Call))
				break
			}
			<-time.After(500 * time.Millisecond) // a poll: a lock of a lost connection may take the server a moment to drop
		}
		o.Return = w.hist.Now()
		w.hist.Add(o)
	}
	return nil
}

// finalRead reads a counter once into o.Count.
func (w *Workload) finalRead(l *link, o *Op) error {
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.c.OpenMode(o.File, accessRead, shareAll, true); return }); err != nil {
		return err
	}
	buf := make([]byte, counterSize)
	var n int
	err := l.step(o, func() error { return readAt(f, buf, &n) })
	l.step(&Op{}, f.Close)
	if err != nil {
		return err
	}
	o.Count, err = parseCounter(buf[:n])
	return err
}
