package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWrites counts the keys a real etcd applied after a revision: three
// puts in one transaction and a delete are two revisions and four keys.
func TestWrites(t *testing.T) {
	eps, stop, err := store.StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	if _, err := cli.Put(ctx, "/smbcluster/v1/live/n1", "x"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := etcdCmd("rev", []string{"-etcd", eps[0]}, &b); err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(b.String())
	_, err = cli.Txn(ctx).Then(clientv3.OpPut("/smbcluster/v1/opens/n1/1", "a"),
		clientv3.OpPut("/smbcluster/v1/opens/n1/2", "b"), clientv3.OpPut("/smbcluster/v1/sessions/3", "c")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/smbcluster/v1/opens/n1/1"); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := etcdCmd("writes", []string{"-etcd", eps[0], "-from", rev}, &b); err != nil {
		t.Fatal(err)
	}
	var w writes
	if err := json.Unmarshal(b.Bytes(), &w); err != nil {
		t.Fatal(err)
	}
	if w.Revisions != 2 || w.Keys != 4 || w.ByPrefix["opens"] != 3 || w.ByPrefix["sessions"] != 1 {
		t.Errorf("writes %+v, want 2 revisions, 4 keys: 3 opens, 1 sessions", w)
	}
	// Nothing since the last revision: zero, without waiting.
	b.Reset()
	if err := etcdCmd("writes", []string{"-etcd", eps[0], "-from", "99999"}, &b); err != nil || !strings.Contains(b.String(), `"keys":0`) {
		t.Errorf("writes from a future revision: %v %s", err, b.String())
	}
}

// TestReport: the ratio, the etcd writes and a missing break are stated.
func TestReport(t *testing.T) {
	open := func(rate float64) json.RawMessage {
		return json.RawMessage(`{"ops_s":` + jsonNum(rate) + `,"total_ops":1000,"lat_us":{"p50":200,"p99":900}}`)
	}
	peer, two, none, many := int64(5), int64(2000), int64(3), int64(990)
	cells := []cell{
		{Cell: "files", Place: "one", Result: open(1000), Etcd: &writes{Keys: 4, Revisions: 2, ByPrefix: map[string]int64{"opens": 2}}},
		{Cell: "files", Place: "spread", Result: open(850), Etcd: &writes{Keys: 10, Revisions: 5, ByPrefix: map[string]int64{"opens": 6}}},
		{Cell: "leasebreak", Place: "cross", Result: json.RawMessage(`{"holder_server":"a","other_server":"b","tries":5,"granted":"RWH","missing":5}`)},
		{Cell: "hot-own", Place: "one", Result: open(2000), PeerRPCs: &two}, // picked as node 1's, measured remote
		{Cell: "hot-own", Place: "spread", Result: open(1700)},
		{Cell: "hot-other", Place: "one", Result: open(1500), PeerRPCs: &none, Delegated: &many}, // remote, under a delegation
		{Cell: "hot-other", Place: "spread", Result: open(1400)},
		{Cell: "write-4k", Place: "spread", PeerRPCs: &peer, Result: json.RawMessage(`{"bs":4096,"write":{"ops":1000,"mib_s":3.9,"iops":1000,"lat_us":{"p50":300,"p99":900}}}`)},
	}
	var b bytes.Buffer
	writeReport(&b, meta{Nodes: 3, Conns: 4}, cells)
	for _, want := range []string{
		"| spread ≥ 80 % of one node: open+close, own files | 85 % (850 / 1000 ops/s) |",
		"| zero etcd writes per uncontended open (own files, spread) | 0.0100 keys/op (10 over 1000 ops; 6 under opens/) |",
		"**no break arrived** (5 of 5 conflicting opens",
		"| a → b | 5 | RWH | 0 | 0 | 5 | - | - | - |",
		"| spread ≥ 80 % of one node: open+close, one hot file another node owns | 85 % (1700 / 2000 ops/s) |",
		"| spread ≥ 80 % of one node: open+close, one hot file another node owns | 93 % (1400 / 1500 ops/s) |",
		"| 4 KiB, file another node owns, spread | 1000 | 4 | 300 µs | 900 µs | 0.0050 (5) |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "one hot file |") {
		t.Errorf("report has a row for a workload not run:\n%s", b.String())
	}
}

func jsonNum(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
