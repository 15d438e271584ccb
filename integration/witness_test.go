package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// witnessClient is node/witness's Python client of Samba's bindings.
var witnessClient = filepath.Join("..", "node", "witness", "testdata", "witness_client.py")

const (
	witnessUser     = "wit"
	witnessPassword = "Wit-Pass-1"
	// witnessMargin is what RESOURCE_CHANGE may take beyond the lease
	// TTL: etcd's expiry tick, the watch, the answer.
	witnessMargin = 5 * time.Second
)

func needPythonSamba(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import samba.dcerpc.witness").Run(); err != nil {
		t.Skip("python3-samba not installed")
	}
}

// witnessCluster starts three nodes whose witness services listen on one
// port, wport, of each node's address.
func witnessCluster(t *testing.T, extra ...string) (*framework.Cluster, int) {
	t.Helper()
	wport := framework.CommonFreePort(t, 3)
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3,
		NodeArgs: append([]string{"--witness-port", strconv.Itoa(wport)}, extra...)})
	c.MustSMBCtl(t, "user", "add", witnessUser, "--password", witnessPassword)
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	return c, wport
}

func witnessBinding(n int, port int, opts string) string {
	return "ncacn_ip_tcp:127.0.0." + strconv.Itoa(n) + "[" + strconv.Itoa(port) + "," + opts + "]"
}

// pyWitness runs the Python client; its JSON lines arrive on the channel.
func pyWitness(t *testing.T, binding string, args ...string) <-chan map[string]any {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", append([]string{witnessClient, binding, witnessUser, witnessPassword}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ch := make(chan map[string]any, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ch <- m
			}
		}
	}()
	return ch
}

func nextLine(t *testing.T, ch <-chan map[string]any, within time.Duration, what string) map[string]any {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the client exited", what)
		}
		return m
	case <-time.After(within):
		t.Fatalf("%s: nothing within %v", what, within)
	}
	return nil
}

func wantResourceChange(t *testing.T, m map[string]any, ip string, state float64) {
	t.Helper()
	msgs, _ := m["messages"].([]any)
	if m["type"] != float64(1) || len(msgs) != 1 {
		t.Fatalf("want RESOURCE_CHANGE, got %v", m)
	}
	rc := msgs[0].(map[string]any)
	if rc["name"] != ip || rc["state"] != state {
		t.Fatalf("RESOURCE_CHANGE %v, want %s state %#x", rc, ip, int(state))
	}
}

// TestWitnessNodeDeath: a client registers through node 1 for node 2's
// address; node 2 is killed; AsyncNotify answers RESOURCE_CHANGE
// unavailable within the lease TTL plus witnessMargin, IP_CHANGEs as its
// public address moves, and RESOURCE_CHANGE available when it returns. Every node lists
// every live node's address, its own not as a witness interface.
func TestWitnessNodeDeath(t *testing.T) {
	needPythonSamba(t)
	c, wport := witnessCluster(t)
	for n := 1; n <= 3; n++ {
		m := nextLine(t, pyWitness(t, witnessBinding(n, wport, "sign"), "list"), clusterDeadline, "GetInterfaceList")
		ifs, _ := m["interfaces"].([]any)
		if len(ifs) != 3 {
			t.Fatalf("node %d lists %v", n, m)
		}
		for _, i := range ifs {
			i := i.(map[string]any)
			own := i["ipv4"] == "127.0.0."+strconv.Itoa(n)
			if witnessIf := int(i["flags"].(float64))&4 != 0; witnessIf == own || i["state"] != float64(1) {
				t.Errorf("node %d lists %v", n, i)
			}
		}
	}
	// RegisterEx with WITNESS_REGISTER_IP_NOTIFICATION: node 2's public
	// address going offline and coming back online on another node are
	// IP_CHANGEs, in whatever order with the RESOURCE_CHANGE.
	ch := pyWitness(t, witnessBinding(1, wport, "seal,ndr64"), "register", "SMBCLUSTER", "127.0.0.2", "V2", "0", "6")
	if m := nextLine(t, ch, clusterDeadline, "RegisterEx"); m["ready"] != true {
		t.Fatalf("RegisterEx: %v", m)
	}
	start := time.Now()
	c.Nodes[1].Kill(t)
	deadline := start.Add(c.LeaseTTL + witnessMargin)
	var ipChanges []string
	for {
		m := nextLine(t, ch, time.Until(deadline), "RESOURCE_CHANGE after node2's death")
		if m["type"] == float64(4) {
			for _, a := range m["messages"].([]any)[0].(map[string]any)["addrs"].([]any) {
				a := a.(map[string]any)
				ipChanges = append(ipChanges, fmt.Sprintf("%v/%#x", a["ipv4"], int(a["flags"].(float64))))
			}
			continue
		}
		wantResourceChange(t, m, "127.0.0.2", 0xff)
		break
	}
	t.Logf("RESOURCE_CHANGE unavailable %v after kill -9 (lease TTL %v)", time.Since(start).Round(time.Millisecond), c.LeaseTTL)
	for len(ipChanges) < 2 {
		m := nextLine(t, ch, clusterDeadline, "IP_CHANGEs of node2's public address")
		if m["type"] != float64(4) {
			t.Fatalf("want IP_CHANGE, got %v", m)
		}
		for _, a := range m["messages"].([]any)[0].(map[string]any)["addrs"].([]any) {
			a := a.(map[string]any)
			ipChanges = append(ipChanges, fmt.Sprintf("%v/%#x", a["ipv4"], int(a["flags"].(float64))))
		}
	}
	// Offline (0x10|V4), then online on the survivor that took it (0x08|V4).
	if want := []string{"127.0.0.2/0x11", "127.0.0.2/0x9"}; !slices.Equal(ipChanges, want) {
		t.Errorf("IP_CHANGEs %v, want %v", ipChanges, want)
	}

	// node2 returns: RESOURCE_CHANGE available (its address moving back
	// is IP_CHANGEs again).
	n := c.Nodes[1]
	c.Nodes[1] = c.LaunchNode(t, n.Name, n.Addr, "--join-token-file", n.TokenFile, "--witness-port", strconv.Itoa(wport))
	for {
		m := nextLine(t, ch, clusterDeadline, "RESOURCE_CHANGE after node2's return")
		if m["type"] != float64(4) {
			wantResourceChange(t, m, "127.0.0.2", 1)
			break
		}
	}
	// Its live record came first; let it finish joining before the test
	// ends (and stops it).
	framework.WaitFor(t, clusterDeadline, "node2 serving its address again", func() bool {
		return slices.Contains(c.NodeListed(t, "node2").Serving, n.Addr)
	})
}

// TestWitnessRegistrationSurvives: a registration taken by node 1 outlives
// node 1: the client waits on node 3 with its handle, and hears of node 2
// being drained (moved to node 3, node 2 unavailable).
func TestWitnessRegistrationSurvives(t *testing.T) {
	needPythonSamba(t)
	c, wport := witnessCluster(t)
	m := nextLine(t, pyWitness(t, witnessBinding(1, wport, "sign"), "register-only", "SMBCLUSTER", "127.0.0.2"), clusterDeadline, "RegisterEx")
	handle, _ := m["handle"].(string)
	if handle == "" {
		t.Fatalf("RegisterEx: %v", m)
	}
	c.Nodes[0].Kill(t)
	framework.WaitFor(t, clusterDeadline, "node1 down", func() bool {
		st, _ := c.NodeState(t, "node1")
		return st == "down"
	})
	ch := pyWitness(t, witnessBinding(3, wport, "seal"), "notify", handle, "2")
	c.MustSMBCtl(t, "node", "drain", "node2")
	// The drain sends CLIENT_MOVE (to node 3, the only other live node)
	// and RESOURCE_CHANGE, in either order.
	var sawMove, sawDown bool
	for range 2 {
		m = nextLine(t, ch, clusterDeadline, "notifications of node2's drain")
		if m["type"] == float64(2) {
			wantMove(t, m, 2, "127.0.0.3")
			sawMove = true
			continue
		}
		wantResourceChange(t, m, "127.0.0.2", 0xff)
		sawDown = true
	}
	if !sawMove || !sawDown {
		t.Fatalf("move %v, resource change %v", sawMove, sawDown)
	}
	if m = nextLine(t, ch, clusterDeadline, "UnRegister"); m["unregistered"] != true {
		t.Fatalf("UnRegister: %v", m)
	}
}

// TestWitnessRpcclient: rpcclient's witness commands through each node,
// found through the endpoint mapper on port 135.
func TestWitnessRpcclient(t *testing.T) {
	if _, err := exec.LookPath("rpcclient"); err != nil {
		t.Skip("rpcclient not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("the endpoint mapper's port 135 needs root")
	}
	witnessCluster(t, "--epm-port", "135")
	for n := 1; n <= 3; n++ {
		host := "127.0.0." + strconv.Itoa(n)
		run := func(cmds string) string {
			t.Helper()
			out, err := exec.Command("rpcclient", "-U", witnessUser+"%"+witnessPassword, "-c", cmds, "ncacn_ip_tcp:"+host+"[sign]").CombinedOutput()
			if err != nil {
				t.Fatalf("rpcclient %s -c %q: %v\n%s", host, cmds, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		out := run("GetInterfaceList")
		for m := 1; m <= 3; m++ {
			if !strings.Contains(out, "127.0.0."+strconv.Itoa(m)) {
				t.Errorf("node %d: GetInterfaceList without node %d:\n%s", n, m, out)
			}
		}
		other := "127.0.0." + strconv.Itoa(n%3+1)
		h1 := run("Register --net=SMBCLUSTER --ip=" + other + " --client=RPCCLIENT --V1")
		h2 := run("RegisterEx --net=SMBCLUSTER --ip=" + other + " --client=RPCCLIENT")
		for _, h := range []string{h1, h2} {
			if !strings.HasPrefix(h, "0:") {
				t.Fatalf("node %d: a handle? %q", n, h)
			}
			run("UnRegister " + h)
		}
	}
}

// TestWitnessTorture runs smbtorture's rpc.witness through each node,
// signed and sealed: five of its six tests; the sixth, the keep-alive
// timeouts test, waits 231 s per witness interface and runs sealed
// through the three nodes at once beside the other smbtorture runs
// (integration/torture TestTortureWitnessTimeouts). AsyncNotify takes the cluster's network name offline
// and back through clusapi ([MS-CMRP]) on the same port, as witnessUser,
// a --cluster-admin, and expects RESOURCE_CHANGE unavailable for its
// registration.
func TestWitnessTorture(t *testing.T) {
	if _, err := exec.LookPath("smbtorture"); err != nil {
		t.Skip("smbtorture not installed")
	}
	c, wport := witnessCluster(t, "--cluster-admin", witnessUser)
	torture := func(n int, prot string, tests ...string) error {
		args := []string{witnessBinding(n, wport, prot), "-U", witnessUser + "%" + witnessPassword,
			"-p", strconv.Itoa(c.Port), "--option=torture:net_name=SMBCLUSTER"}
		for _, name := range tests {
			args = append(args, "rpc.witness.witness."+name)
		}
		out, err := exec.Command("smbtorture", args...).CombinedOutput()
		for _, name := range tests {
			if !strings.Contains(string(out), "success: witness."+name+"\n") {
				err = errors.Join(err, fmt.Errorf("witness.%s did not succeed", name))
			}
		}
		if err != nil {
			return fmt.Errorf("smbtorture %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	tests := []string{"GetInterfaceList", "Register", "UnRegister", "RegisterEx", "AsyncNotify"}
	for n := 1; n <= 3; n++ {
		for _, prot := range []string{"sign", "seal"} {
			if err := torture(n, prot, tests...); err != nil {
				t.Fatalf("node %d, %s: %v", n, prot, err)
			}
		}
	}
}

// wantMove checks a CLIENT_MOVE (kind 2) or SHARE_MOVE (3) naming ip,
// online.
func wantMove(t *testing.T, m map[string]any, kind float64, ip string) {
	t.Helper()
	msgs, _ := m["messages"].([]any)
	if m["type"] != kind || len(msgs) != 1 {
		t.Fatalf("want move type %v, got %v", kind, m)
	}
	addrs, _ := msgs[0].(map[string]any)["addrs"].([]any)
	if len(addrs) != 1 || addrs[0].(map[string]any)["ipv4"] != ip || addrs[0].(map[string]any)["flags"] != float64(0x09) {
		t.Fatalf("move names %v, want %s online", addrs, ip)
	}
}

// TestWitnessMoves: `smbctl client move` reaches the client, waiting on
// node 1, with CLIENT_MOVE naming node 3's address, and so does `smbctl
// session move` of its SMB session; draining node 2 sends
// every client registered for its address a CLIENT_MOVE to another node
// (and RESOURCE_CHANGE unavailable), whichever node they wait on.
func TestWitnessMoves(t *testing.T) {
	needPythonSamba(t)
	c, wport := witnessCluster(t)
	ch := pyWitness(t, witnessBinding(1, wport, "seal"), "register", "SMBCLUSTER", "127.0.0.2", "V1", "0", "1")
	if m := nextLine(t, ch, clusterDeadline, "Register"); m["ready"] != true {
		t.Fatalf("Register: %v", m)
	}
	c.MustSMBCtl(t, "client", "move", "WITNESSTEST", "--to", "node3")
	wantMove(t, nextLine(t, ch, clusterDeadline, "CLIENT_MOVE"), 2, "127.0.0.3")
	if m := nextLine(t, ch, clusterDeadline, "UnRegister"); m["unregistered"] != true {
		t.Fatalf("UnRegister: %v", m)
	}

	// smbctl session move: the SMB session and the witness registration
	// come from the same client address.
	ch = pyWitness(t, witnessBinding(1, wport, "sign"), "register", "SMBCLUSTER", "127.0.0.2", "V1", "0", "1")
	if m := nextLine(t, ch, clusterDeadline, "Register"); m["ready"] != true {
		t.Fatalf("Register: %v", m)
	}
	smb := clusterSession(t, c.Nodes[0], witnessUser, witnessPassword, "data")
	framework.WaitFor(t, clusterDeadline, "the session published", func() bool {
		return c.SMBCtl(t, "session", "move", fmt.Sprintf("0x%x", smb.Session.ID), "--to", "node3").ExitCode == 0
	})
	wantMove(t, nextLine(t, ch, clusterDeadline, "CLIENT_MOVE of the session"), 2, "127.0.0.3")
	if m := nextLine(t, ch, clusterDeadline, "UnRegister"); m["unregistered"] != true {
		t.Fatalf("UnRegister: %v", m)
	}
	smb.Close()

	// Two clients of node 2's address, waiting on nodes 1 and 3.
	var clients []<-chan map[string]any
	for _, n := range []int{1, 3} {
		ch := pyWitness(t, witnessBinding(n, wport, "sign"), "register", "SMBCLUSTER", "127.0.0.2", "V1", "0", "2")
		if m := nextLine(t, ch, clusterDeadline, "Register"); m["ready"] != true {
			t.Fatalf("Register: %v", m)
		}
		clients = append(clients, ch)
	}
	framework.WaitFor(t, clusterDeadline, "both clients waiting", func() bool {
		var regs []struct {
			WaitingOn []string `json:"waiting_on"`
		}
		c.SMBCtlJSON(t, &regs, "witness", "ls")
		waiting := 0
		for _, r := range regs {
			waiting += len(r.WaitingOn)
		}
		return waiting == 2
	})
	c.MustSMBCtl(t, "node", "drain", "node2")
	for i, ch := range clients {
		var sawMove, sawDown bool
		for range 2 {
			m := nextLine(t, ch, clusterDeadline, "notifications of the drain")
			switch m["type"] {
			case float64(2):
				msgs := m["messages"].([]any)
				ip := msgs[0].(map[string]any)["addrs"].([]any)[0].(map[string]any)["ipv4"]
				if ip != "127.0.0.1" && ip != "127.0.0.3" {
					t.Errorf("client %d moved to %v", i, ip)
				}
				sawMove = true
			case float64(1):
				wantResourceChange(t, m, "127.0.0.2", 0xff)
				sawDown = true
			default:
				t.Errorf("client %d: %v", i, m)
			}
		}
		if !sawMove || !sawDown {
			t.Errorf("client %d: move %v, resource change %v", i, sawMove, sawDown)
		}
	}
}

// TestClusapiNetName: through clusapi ([MS-CMRP]) with rpcclient, sealed,
// a --cluster-admin takes the cluster's network name offline through node
// 1 — every node then refuses TREE_CONNECT to a disk share with
// STATUS_NETWORK_NAME_DELETED, IPC$ still answers — and back online
// through node 2; a user who is no administrator reads the cluster but is
// refused the change, and a signed binding (below packet privacy) is
// refused the interface; `smbctl netname` shows who did it and does the
// same. rpcclient finds clusapi through the endpoint mapper.
func TestClusapiNetName(t *testing.T) {
	if _, err := exec.LookPath("rpcclient"); err != nil {
		t.Skip("rpcclient not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("the endpoint mapper's port 135 needs root")
	}
	c, _ := witnessCluster(t, "--cluster-admin", witnessUser, "--epm-port", "135")
	const plainUser, plainPassword = "plain", "Plain-Pass-1"
	c.MustSMBCtl(t, "user", "add", plainUser, "--password", plainPassword)
	rpc := func(n int, user, password, prot, cmds string) (string, error) {
		out, err := exec.Command("rpcclient", "-U", user+"%"+password, "-c", cmds, "ncacn_ip_tcp:127.0.0."+strconv.Itoa(n)+"["+prot+"]").CombinedOutput()
		return string(out), err
	}
	mustRPC := func(n int, user, password, cmds string) string {
		t.Helper()
		out, err := rpc(n, user, password, "seal", cmds)
		if err != nil || strings.Contains(out, "error:") || strings.Contains(out, "result was") {
			t.Fatalf("rpcclient node %d %s -c %q: %v\n%s", n, user, cmds, err, out)
		}
		return out
	}
	for n := 1; n <= 3; n++ {
		out := mustRPC(n, plainUser, plainPassword, "clusapi_get_cluster_name; clusapi_get_cluster_version; clusapi_get_cluster_version2; clusapi_create_enum 0d; clusapi_get_resource_state SMBCLUSTER")
		if !strings.Contains(out, "ClusterName: SMBCLUSTER") || !strings.Contains(out, "NodeName: node"+strconv.Itoa(n)) {
			t.Fatalf("node %d: GetClusterName:\n%s", n, out)
		}
	}
	if out, _ := rpc(1, plainUser, plainPassword, "seal", "clusapi_offline_resource SMBCLUSTER"); !strings.Contains(out, "WERR_ACCESS_DENIED") {
		t.Fatalf("offline by a user who is no administrator:\n%s", out)
	}
	if out, _ := rpc(1, witnessUser, witnessPassword, "sign", "clusapi_get_cluster_name"); strings.Contains(out, "ClusterName:") {
		t.Fatalf("clusapi below packet privacy answered:\n%s", out)
	}
	treeConnect := func(n int, share string) framework.Result {
		return framework.SMBClient{Node: c.Nodes[n-1].Node, User: witnessUser, Password: witnessPassword}.Script(t, "", share, "ls")
	}
	for n := 1; n <= 3; n++ {
		if r := treeConnect(n, "data"); r.ExitCode != 0 {
			t.Fatalf("node %d before: %s", n, r)
		}
	}
	mustRPC(1, witnessUser, witnessPassword, "clusapi_offline_resource SMBCLUSTER")
	for n := 1; n <= 3; n++ {
		framework.WaitFor(t, clusterDeadline, fmt.Sprintf("node %d refusing trees", n), func() bool {
			return strings.Contains(treeConnect(n, "data").Output(), "NT_STATUS_NETWORK_NAME_DELETED")
		})
		list := framework.SMBClient{Node: c.Nodes[n-1].Node, User: witnessUser, Password: witnessPassword}
		if r := list.List(t); r.ExitCode != 0 {
			t.Fatalf("node %d: IPC$ while offline: %s", n, r)
		}
	}
	if r := c.MustSMBCtl(t, "netname", "get", "-o", "json"); !strings.Contains(r.Stdout, `"state": "offline"`) ||
		!strings.Contains(r.Stdout, `"changed_by": "`+witnessUser+`"`) || !strings.Contains(r.Stdout, `"node": "node1"`) {
		t.Fatalf("smbctl netname get:\n%s", r.Stdout)
	}
	mustRPC(2, witnessUser, witnessPassword, "clusapi_online_resource SMBCLUSTER")
	for n := 1; n <= 3; n++ {
		framework.WaitFor(t, clusterDeadline, fmt.Sprintf("node %d serving trees", n), func() bool {
			return treeConnect(n, "data").ExitCode == 0
		})
	}
	// The operator's way to the same: smbctl netname offline|online.
	c.MustSMBCtl(t, "netname", "offline")
	framework.WaitFor(t, clusterDeadline, "node 3 refusing trees", func() bool {
		return strings.Contains(treeConnect(3, "data").Output(), "NT_STATUS_NETWORK_NAME_DELETED")
	})
	c.MustSMBCtl(t, "netname", "online")
	framework.WaitFor(t, clusterDeadline, "node 3 serving trees", func() bool { return treeConnect(3, "data").ExitCode == 0 })
}
