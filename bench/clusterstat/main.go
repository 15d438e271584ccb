package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: clusterstat freeport|rev|writes|shards|counter|report|scaling|forward [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "freeport":
		err = freePort(args, os.Stdout)
	case "rev", "writes", "shards":
		err = etcdCmd(cmd, args, os.Stdout)
	case "counter":
		err = counterCmd(args, os.Stdout)
	case "report":
		err = reportCmd(args)
	case "scaling":
		err = scalingCmd(args)
	case "forward":
		err = forwardCmd(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterstat:", err)
		os.Exit(1)
	}
}

// freePort finds a port nothing listens on at 127.0.0.1 through
// 127.0.0.N (-nodes N, 3 by default: the local cluster's nodes, and its
// coordinator on .1).
func freePort(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("freeport", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "the addresses 127.0.0.1 through 127.0.0.`N`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		for i := 2; i <= *nodes; i++ {
			h := fmt.Sprintf("127.0.0.%d", i)
			if o, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port))); err == nil {
				ls = append(ls, o)
			}
		}
		for _, x := range ls {
			x.Close()
		}
		if len(ls) == max(*nodes, 1) {
			fmt.Fprintln(w, port)
			return nil
		}
	}
	return fmt.Errorf("no port free on 127.0.0.1-%d", *nodes)
}

// writes is what writes prints.
type writes struct {
	From      int64            `json:"from"`
	To        int64            `json:"to"`
	Revisions int64            `json:"revisions"` // transactions applied
	Keys      int64            `json:"keys"`      // puts and deletes
	ByPrefix  map[string]int64 `json:"by_prefix"`
}

func etcdCmd(cmd string, args []string, w io.Writer) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	endpoint := fs.String("etcd", "", "etcd client URL")
	from := fs.Int64("from", 0, "count writes after this revision")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	rev := resp.Header.Revision
	if cmd == "shards" {
		return shardsCmd(ctx, cli, w)
	}
	if cmd == "rev" {
		_, err := fmt.Fprintln(w, rev)
		return err
	}
	out := writes{From: *from, To: rev, Revisions: max(rev-*from, 0), ByPrefix: map[string]int64{}}
	if rev > *from {
		if err := countWrites(ctx, cli, *from, rev, &out); err != nil {
			return err
		}
	}
	return json.NewEncoder(w).Encode(out)
}

// shardsCmd prints how many shards have an owner and the latest
// revision any of their records changed at: a shard map that settled
// prints the same line again.
func shardsCmd(ctx context.Context, cli *clientv3.Client, w io.Writer) error {
	resp, err := cli.Get(ctx, statev1.ShardsPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	var last int64
	for _, kv := range resp.Kvs {
		last = max(last, kv.ModRevision)
	}
	_, err = fmt.Fprintf(w, "%d %d\n", len(resp.Kvs), last)
	return err
}

// countWrites watches every key from revision from+1 through to.
func countWrites(ctx context.Context, cli *clientv3.Client, from, to int64, out *writes) error {
	wch := cli.Watch(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(from+1))
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision > to {
				return nil
			}
			out.Keys++
			out.ByPrefix[prefixOf(string(ev.Kv.Key))]++
			if ev.Kv.ModRevision == to && ev == resp.Events[len(resp.Events)-1] {
				return nil
			}
		}
	}
	return ctx.Err()
}

// prefixOf is the key's first component under /smbcluster/v1/.
func prefixOf(key string) string {
	rest, ok := strings.CutPrefix(key, "/smbcluster/v1/")
	if !ok {
		return "other"
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// counterCmd sums an expvar integer over /debug/vars URLs: the hook for
// the nodes' peer RPC counter.
func counterCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("counter", flag.ContinueOnError)
	name := fs.String("name", "smbcluster_peer_rpcs", "expvar name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var sum int64
	c := http.Client{Timeout: 5 * time.Second}
	for _, u := range fs.Args() {
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		var vars map[string]json.RawMessage
		err = json.NewDecoder(resp.Body).Decode(&vars)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		raw, ok := vars[*name]
		if !ok {
			return fmt.Errorf("%s: no %s", u, *name)
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %s = %s: %w", u, *name, raw, err)
		}
		sum += v
	}
	_, err := fmt.Fprintln(w, sum)
	return err
}
