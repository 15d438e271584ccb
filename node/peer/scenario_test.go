package peer

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// Scenario tests of the owner side (testdata/owner/*.txt), in the manner
// of CockroachDB's datadriven tests: each file is a sequence of commands
// run against routers on an in-memory mesh, each followed by "----" and
// the output it must give. `go test ./node/peer -run TestOwnerScenarios
// -rewrite` writes the outputs the code gives instead (review the diff).
//
// Commands (arguments key=value; a bare word is a flag):
//
//	nodes owner=a a b c [deleg]   routers a, b, c; a owns every shard; deleg: admission delegation on
//	open node=b name=o1 [file=1] [access=rw] [share=rwd] [oplock=none|ii|excl|batch] [lease=rwh key=k] [async]
//	await name=o1                 the answer to an async open
//	close node=b name=o1          Remove (a close that wants its answer)
//	drop node=b name=o1           Drop (a close that may not wait for it)
//	breaks name=o1                the next break delivered to o1 (waits for it)
//	ack node=b name=o1 level=ii   an oplock break's acknowledgment
//	ack-lease node=b key=k state=r
//	lock node=b name=o1 off=0 len=10 [excl]
//	unlock node=b name=o1 off=0 len=10
//	io node=b name=o1 off=0 len=10 [write]
//	delete-pending node=b name=o1 on|off
//	proxies node=a                the owner's proxies: holder:open file= [in]
//	busy node=a                   ShardBusy of file 1's shard: whether node keeps state of its files
//	drop-node node=a gone=b       the owner drops every open node gone held
//
// Access and share letters: r (read), w (write), d (delete).
var rewrite = flag.Bool("rewrite", false, "write the outputs of testdata/owner/*.txt scenarios as the code gives them")

func TestOwnerScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/owner/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in testdata/owner: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScenario(t, f) })
	}
}

// step is one command of a scenario and the output it must give.
type step struct {
	line int
	pre  string // the comments before it
	cmd  string
	want string
}

func parseScenario(t *testing.T, path string) []step {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []step
	var cur *step
	var pre strings.Builder
	inOut := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "#"):
			pre.WriteString(line + "\n")
		case cur == nil && strings.TrimSpace(line) == "":
		case cur == nil:
			steps = append(steps, step{line: n, pre: pre.String(), cmd: line})
			cur = &steps[len(steps)-1]
			pre.Reset()
		case !inOut && line == "----":
			inOut = true
		case !inOut:
			t.Fatalf("%s:%d: a command's output starts with ----", path, n)
		case line == "":
			cur, inOut = nil, false
		default:
			cur.want += line + "\n"
		}
	}
	return steps
}

func runScenario(t *testing.T, path string) {
	steps := parseScenario(t, path)
	sc := &scenario{t: t, opens: map[string]*scenOpen{}, names: map[refKey]string{}}
	var out strings.Builder
	failed := false
	for _, s := range steps {
		got := sc.run(s.cmd)
		if got != "" && !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		if got != s.want && !*rewrite {
			t.Errorf("%s:%d: %s\ngot:\n%swant:\n%s", path, s.line, s.cmd, got, s.want)
			failed = true
		}
		fmt.Fprintf(&out, "%s%s\n----\n%s\n", s.pre, s.cmd, got)
	}
	if *rewrite && !failed {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario is the state of one scenario: its routers and named opens.
type scenario struct {
	t       *testing.T
	routers map[string]*Router
	opens   map[string]*scenOpen
	names   map[refKey]string // proxies' names, by holder's ref
}

// scenOpen is a named open, its breaks and the answer to its admission.
type scenOpen struct {
	node   string
	o      *state.Open
	breaks *breaks
	answer chan string
}

func (sc *scenario) run(cmd string) string {
	fields := strings.Fields(cmd)
	args := map[string]string{}
	var bare []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			bare = append(bare, f)
		}
	}
	r := sc.routers[args["node"]]
	o := sc.opens[args["name"]]
	switch fields[0] {
	case "nodes":
		sc.start(args["owner"], bare)
		return ""
	case "open":
		return sc.open(r, args, slices.Contains(bare, "async"))
	case "await":
		return sc.await(o)
	case "close":
		last, dp := r.Remove(o.o)
		return fmt.Sprintf("last=%v delete-pending=%v", last, dp)
	case "drop":
		ds, df := r.Drop(o.o)
		return fmt.Sprintf("delete-stream=%v delete-file=%v", ds, df)
	case "breaks":
		return sc.nextBreak(o)
	case "ack":
		return fmt.Sprintf("ok=%v", r.Ack(o.o, oplockLevel(args["level"])))
	case "ack-lease":
		st, err := r.AckLease(scenLease(args["key"]), leaseState(args["state"]))
		return result(fmt.Sprintf("state=%s", leaseString(st)), err)
	case "lock":
		return result("granted", r.Lock(o.o, []state.Lock{sc.lockArg(args, slices.Contains(bare, "excl"))}))
	case "unlock":
		n, err := r.Unlock(o.o, []state.Lock{sc.lockArg(args, false)})
		return result(fmt.Sprintf("unlocked %d", n), err)
	case "io":
		l := sc.lockArg(args, false)
		return result("allowed", r.CheckIO(o.o, l.Offset, l.Length, slices.Contains(bare, "write")))
	case "delete-pending":
		r.MarkDeletePending(o.o, slices.Contains(bare, "on"))
		return ""
	case "proxies":
		return sc.proxies(r)
	case "busy":
		return fmt.Sprintf("%v", r.ShardBusy(ShardOf(scenKey(1))))
	case "drop-node":
		return fmt.Sprintf("dropped %d", r.DropNode(args["gone"], 0))
	}
	sc.t.Fatalf("no command %q", fields[0])
	return ""
}

// start starts routers named names on an in-memory mesh, every shard
// owned by owner; delegation is off unless "deleg" is among names.
func (sc *scenario) start(owner string, names []string) {
	deleg := slices.Contains(names, "deleg")
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "deleg" })
	mem := mesh.NewMemory()
	peers := map[string]string{}
	sc.routers = map[string]*Router{}
	for _, name := range names {
		l := mem.Listen(name)
		peers[name] = l.Addr().String()
		r := newRouter(sc.t, &staticRoutes{self: name, owner: owner, peers: peers}, mem.Dial)
		if !deleg {
			r.maxDelegs = 0
		}
		srv := grpc.NewServer()
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(l)
		sc.t.Cleanup(func() { srv.Stop(); r.Close() })
		sc.routers[name] = r
	}
}

func (sc *scenario) open(r *Router, args map[string]string, async bool) string {
	name := args["name"]
	file, _ := strconv.Atoi(orDefault(args["file"], "1"))
	br := newBreaks()
	o := &state.Open{Key: scenKey(uint64(file)), Name: name, Access: accessBits(orDefault(args["access"], "rw")),
		ShareAccess: accessBits(orDefault(args["share"], "rwd")), Breaker: br}
	req := state.Request{Oplock: oplockLevel(args["oplock"])}
	if l, ok := args["lease"]; ok {
		req.Lease = &state.LeaseRequest{ID: scenLease(args["key"]), State: leaseState(l), Version: 2}
	}
	so := &scenOpen{node: args["node"], o: o, breaks: br, answer: make(chan string, 1)}
	sc.opens[name] = so
	go func() {
		g, err := r.Admit(context.Background(), o, req, nil)
		so.answer <- result(grantString(g), err)
	}()
	if async {
		return ""
	}
	return sc.await(so)
}

func (sc *scenario) await(so *scenOpen) string {
	select {
	case a := <-so.answer:
		if !strings.HasPrefix(a, "error") {
			sc.names[refKey{so.node, 1, so.o.Ref}] = so.o.Name
		}
		return a
	case <-time.After(10 * time.Second):
		return "no answer within 10s"
	}
}

func (sc *scenario) nextBreak(so *scenOpen) string {
	select {
	case to := <-so.breaks.oplock:
		return "oplock break to " + oplockString(to)
	case l := <-so.breaks.lease:
		return fmt.Sprintf("lease break %s to %s ack=%v", leaseString(l.From), leaseString(l.To), l.AckRequired)
	case <-time.After(10 * time.Second):
		return "no break within 10s"
	}
}

// proxies lists the owner's proxies, sorted.
func (sc *scenario) proxies(r *Router) string {
	r.own.mu.Lock()
	var out []string
	for k, o := range r.own.proxies {
		name := sc.names[k]
		if name == "" {
			name = fmt.Sprintf("#%d", k.id)
		}
		line := fmt.Sprintf("%s:%s file=%d", k.node, name, o.Key.FileID)
		if r.own.in[o] {
			line += " in"
		}
		out = append(out, line)
	}
	r.own.mu.Unlock()
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "\n")
}

func (sc *scenario) lockArg(args map[string]string, excl bool) state.Lock {
	off, err1 := strconv.ParseUint(orDefault(args["off"], "0"), 10, 64)
	n, err2 := strconv.ParseUint(orDefault(args["len"], "1"), 10, 64)
	if err1 != nil || err2 != nil {
		sc.t.Fatalf("bad range %v", args)
	}
	return state.Lock{Offset: off, Length: n, Exclusive: excl}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func scenKey(file uint64) state.FileKey { return state.FileKey{Volume: 7, FileID: file} }

func scenLease(key string) state.LeaseID {
	var id state.LeaseID
	copy(id.Client[:], "scenario")
	copy(id.Key[:], key)
	return id
}

// accessBits turns letters into FILE_READ_DATA, FILE_WRITE_DATA and
// DELETE (access) or the FILE_SHARE_ bits (share): they are the same bits
// but delete.
func accessBits(s string) uint32 {
	var b uint32
	for _, c := range s {
		switch c {
		case 'r':
			b |= 1
		case 'w':
			b |= 2
		case 'd':
			b |= 4
		}
	}
	return b
}

func oplockLevel(s string) uint8 {
	switch s {
	case "ii":
		return state.OplockLevelII
	case "excl":
		return state.OplockExclusive
	case "batch":
		return state.OplockBatch
	}
	return state.OplockNone
}

func oplockString(l uint8) string {
	switch l {
	case state.OplockLevelII:
		return "ii"
	case state.OplockExclusive:
		return "excl"
	case state.OplockBatch:
		return "batch"
	}
	return "none"
}

func leaseState(s string) uint32 {
	var st uint32
	for _, c := range s {
		switch c {
		case 'r':
			st |= state.LeaseRead
		case 'w':
			st |= state.LeaseWrite
		case 'h':
			st |= state.LeaseHandle
		}
	}
	return st
}

func leaseString(st uint32) string {
	s := ""
	if st&state.LeaseRead != 0 {
		s += "r"
	}
	if st&state.LeaseWrite != 0 {
		s += "w"
	}
	if st&state.LeaseHandle != 0 {
		s += "h"
	}
	if s == "" {
		return "none"
	}
	return s
}

func grantString(g state.Grant) string {
	if g.Lease != nil {
		return "granted lease=" + leaseString(g.Lease.State)
	}
	return "granted oplock=" + oplockString(g.Oplock)
}

func result(ok string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return ok
}
