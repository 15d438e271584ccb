package integration

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestSessionChannelsOnEveryNode: one client's session made through node 1
// gets channels bound through nodes 2 and 3 (each handed to node 1,
// node/handoff); one open is written and read through all three channels;
// a CLOSE through node 3 ends it for every channel; a wrong password's
// bind is refused on another node as on one; smbctl session ls shows the
// channels with their nodes; when node 2 dies the session goes on over the
// two other channels; when node 1, the session's, dies, the channel through
// node 3 is closed.
func TestSessionChannelsOnEveryNode(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3, Metrics: true})
	c.MustSMBCtl(t, "share", "add", "mc", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "hana", "--password", "Hana-Pass-1")
	first := clusterSession(t, c.Nodes[0], "hana", "Hana-Pass-1", "mc")
	chans := []*servertest.Conn{first}
	for _, n := range c.Nodes[1:] {
		ch := servertest.Dial(t, n.Addr)
		ch.ClientGUID = first.ClientGUID
		if err := ch.Negotiate(smb2.Dialect311); err != nil {
			t.Fatal(err)
		}
		if err := ch.Bind(first.Session, "hana", "Hana-Pass-1"); err != nil {
			t.Fatalf("binding a channel through %s to a session of %s: %v", n.Name, c.Nodes[0].Name, err)
		}
		ch.TreeID = first.TreeID
		chans = append(chans, ch)
	}

	t.Run("WrongPassword", func(t *testing.T) {
		ch := servertest.Dial(t, c.Nodes[2].Addr)
		ch.ClientGUID = first.ClientGUID
		if err := ch.Negotiate(smb2.Dialect311); err != nil {
			t.Fatal(err)
		}
		if err := ch.Bind(first.Session, "hana", "wrong"); !errors.Is(err, smb2.StatusLogonFailure) {
			t.Fatalf("bind with a wrong password through another node: %v, want STATUS_LOGON_FAILURE", err)
		}
	})

	fid, err := first.Create("spread.dat")
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	data := make([]byte, 96*chunk)
	rand.Read(data)
	for i := 0; i*chunk < len(data); i++ {
		if _, err := chans[i%3].Write(fid, uint64(i*chunk), data[i*chunk:(i+1)*chunk]); err != nil {
			t.Fatalf("write %d through channel %d: %v", i, i%3, err)
		}
	}
	for i := 0; i*chunk < len(data); i++ {
		got, err := chans[(i+1)%3].Read(fid, uint64(i*chunk), chunk)
		if err != nil || !bytes.Equal(got, data[i*chunk:(i+1)*chunk]) {
			t.Fatalf("read %d through channel %d: %v (data equal: %v)", i, (i+1)%3, err, bytes.Equal(got, data[i*chunk:(i+1)*chunk]))
		}
	}

	// Each arrival node moved its channel's bytes (a third of them, both
	// ways) and counted them; the home node moved none for others.
	for i, n := range c.Nodes {
		m := mustScrape(t, n.MetricsAddr)
		want := float64(len(data) / 3)
		if i == 0 {
			want = 0
		}
		for _, op := range []string{"read", "write"} {
			if got := m.value("smbcluster_handoff_bytes_total", "op", op); got != want {
				t.Errorf("%s: smbcluster_handoff_bytes_total{op=%q} = %v, want %v", n.Name, op, got, want)
			}
		}
	}

	// smbctl session ls: one channel through each node.
	framework.WaitFor(t, clusterDeadline, "the session's channels listed on three nodes", func() bool {
		var sessions []struct {
			SessionID uint64 `json:"session_id"`
			Node      string `json:"node"`
			Channels  []struct {
				Node string `json:"node"`
			} `json:"channels"`
		}
		c.SMBCtlJSON(t, &sessions, "session", "ls")
		for _, s := range sessions {
			if s.SessionID != first.Session.ID {
				continue
			}
			var nodes []string
			for _, ch := range s.Channels {
				nodes = append(nodes, ch.Node)
			}
			slices.Sort(nodes)
			return s.Node == c.Nodes[0].Name && fmt.Sprint(nodes) == fmt.Sprint([]string{c.Nodes[0].Name, c.Nodes[1].Name, c.Nodes[2].Name})
		}
		return false
	})

	if err := chans[2].CloseFile(fid); err != nil {
		t.Fatalf("close through %s: %v", c.Nodes[2].Name, err)
	}
	if _, err := first.Read(fid, 0, 1); !errors.Is(err, smb2.StatusFileClosed) {
		t.Fatalf("read through %s of an open closed through %s: %v, want STATUS_FILE_CLOSED", c.Nodes[0].Name, c.Nodes[2].Name, err)
	}

	c.Nodes[1].Kill(t)
	fid, err = chans[2].Create("after.dat")
	if err != nil {
		t.Fatalf("create through %s after %s died: %v", c.Nodes[2].Name, c.Nodes[1].Name, err)
	}
	if _, err := chans[2].Write(fid, 0, data[:chunk]); err != nil {
		t.Fatal(err)
	}
	if got, err := first.Read(fid, 0, chunk); err != nil || !bytes.Equal(got, data[:chunk]) {
		t.Fatalf("read through %s after %s died: %v", c.Nodes[0].Name, c.Nodes[1].Name, err)
	}
	if err := first.CloseFile(fid); err != nil {
		t.Fatal(err)
	}

	// The session's node dies: the session ends with it, and the channel
	// handed over from node 3 is closed rather than left hanging (the
	// client reconnects, its durable opens waiting for it).
	c.Nodes[0].Kill(t)
	chans[2].Timeout = clusterDeadline
	if err := chans[2].WaitClosed(); err != nil {
		t.Fatalf("the channel through %s once the session's node died: %v", c.Nodes[2].Name, err)
	}
}

// TestSessionHomeStopped: the node holding a session is stopped (SIGSTOP),
// not killed: once the cluster declares it gone (its lease TTL), the node
// a channel of that session was bound through closes the channel, so the
// client reconnects instead of waiting on a node that answers nothing.
func TestSessionHomeStopped(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 2})
	c.MustSMBCtl(t, "share", "add", "mc", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "hana", "--password", "Hana-Pass-1")
	first := clusterSession(t, c.Nodes[0], "hana", "Hana-Pass-1", "mc")
	ch := servertest.Dial(t, c.Nodes[1].Addr)
	ch.ClientGUID = first.ClientGUID
	if err := ch.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := ch.Bind(first.Session, "hana", "Hana-Pass-1"); err != nil {
		t.Fatal(err)
	}
	ch.TreeID = first.TreeID
	if err := ch.Echo(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Nodes[0].Signal(syscall.SIGCONT) })
	stopped := time.Now()
	ch.Timeout = clusterDeadline
	if err := ch.WaitClosed(); err != nil {
		t.Fatalf("the channel through %s once the session's node was stopped: %v", c.Nodes[1].Name, err)
	}
	t.Logf("channel closed %v after the session's node stopped (lease TTL %v)", time.Since(stopped).Round(time.Millisecond), c.LeaseTTL)
}
