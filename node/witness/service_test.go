package witness

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ncacn"
)

type users map[string][16]byte

func (u users) NTHash(user, _ string) ([16]byte, bool) {
	h, ok := u[strings.ToLower(user)]
	return h, ok
}

// server runs the witness interface and an endpoint mapper on loopback
// with user demo/demo, the cluster's resources given.
func server(t *testing.T, hub *Hub) (witnessAddr, epmAddr string) {
	return serverAt(t, hub, "127.0.0.1:0", "127.0.0.1:0")
}

func serverAt(t *testing.T, hub *Hub, waddr, eaddr string) (witnessAddr, epmAddr string) {
	t.Helper()
	env := &Env{Hub: hub, Store: LocalStore{Hub: hub}, Node: "n1",
		NetNames:    func() []string { return []string{"SMBCLUSTER"} },
		ShareExists: func(s string) bool { return strings.EqualFold(s, "demo") }}
	cfg := &auth.Config{Users: users{"demo": auth.NTHash("demo")}, NetBIOSComputer: "SMBCLUSTER", NetBIOSDomain: "WORKGROUP"}
	srv := &ncacn.Server{Security: func() *dcerpc.Security { return ncacn.NTLMSecurity(cfg) }}
	wl, err := net.Listen("tcp", waddr)
	if err != nil {
		t.Fatal(err)
	}
	el, err := net.Listen("tcp", eaddr)
	if err != nil {
		t.Fatal(err)
	}
	iface := env.Interface()
	port := wl.Addr().(*net.TCPAddr).Port
	go srv.Serve(wl, func(net.Addr) []*dcerpc.Interface { return []*dcerpc.Interface{iface} })
	eps := []ncacn.Endpoint{{Syntax: Syntax, Port: func(net.IP) int { return port }}}
	go srv.Serve(el, func(local net.Addr) []*dcerpc.Interface {
		return []*dcerpc.Interface{ncacn.EndpointMapper(local, eps)}
	})
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return wl.Addr().String(), el.Addr().String()
}

func needPythonSamba(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import samba.dcerpc.witness").Run(); err != nil {
		t.Skip("python3-samba not installed")
	}
}

// pyClient starts testdata/witness_client.py and returns its output lines.
func pyClient(t *testing.T, binding string, args ...string) (<-chan map[string]any, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", append([]string{"testdata/witness_client.py", binding, "demo", "demo"}, args...)...)
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
	return ch, cmd
}

func next(t *testing.T, ch <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("client exited")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no answer from the client in 30 s")
	}
	return nil
}

func threeNodes() []Resource {
	return []Resource{
		{Node: "n1", IP: net.ParseIP("127.0.0.1"), Available: true},
		{Node: "n2", IP: net.ParseIP("127.0.0.2"), Available: true},
		{Node: "n3", IP: net.ParseIP("127.0.0.3"), Available: true},
	}
}

func TestPythonSambaClient(t *testing.T) {
	needPythonSamba(t)
	hub := NewHub()
	hub.SetResources(threeNodes())
	hub.SetServed([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.3")})
	waddr, eaddr := server(t, hub)
	host, port, _ := net.SplitHostPort(waddr)
	_, eport, _ := net.SplitHostPort(eaddr)
	for _, binding := range []string{
		"ncacn_ip_tcp:" + host + "[" + port + ",sign]",
		"ncacn_ip_tcp:" + host + "[" + port + ",seal]",
		"ncacn_ip_tcp:" + host + "[" + port + ",sign,spnego]",
		"ncacn_ip_tcp:" + host + "[" + port + ",seal,ntlm]",
		"ncacn_ip_tcp:" + host + "[" + port + ",sign,ndr64]",
	} {
		t.Run(binding, func(t *testing.T) {
			ch, _ := pyClient(t, binding, "list")
			m := next(t, ch)
			ifs, _ := m["interfaces"].([]any)
			if len(ifs) != 3 {
				t.Fatalf("interfaces %v", m)
			}
		})
	}
	_ = eport
	t.Run("notify", func(t *testing.T) {
		binding := "ncacn_ip_tcp:" + host + "[" + port + ",seal,ndr64]"
		ch, _ := pyClient(t, binding, "register", "SMBCLUSTER", "127.0.0.2", "V2", "0", "2")
		if m := next(t, ch); m["ready"] != true {
			t.Fatalf("register: %v", m)
		}
		rs := threeNodes()
		rs[1].Available = false
		hub.SetResources(rs)
		m := next(t, ch)
		if m["type"] != float64(NotifyResourceChange) {
			t.Fatalf("notification %v", m)
		}
		msgs := m["messages"].([]any)
		if rc := msgs[0].(map[string]any); rc["state"] != float64(ResourceUnavailable) || rc["name"] != "127.0.0.2" {
			t.Fatalf("resource change %v", rc)
		}
		// IP_CHANGE was asked for: node 2's public address is served no more.
		hub.SetServed([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.3")})
		m = next(t, ch)
		if m["type"] != float64(NotifyIPChange) {
			t.Fatalf("notification %v", m)
		}
		if m = next(t, ch); m["unregistered"] != true {
			t.Fatalf("unregister: %v", m)
		}
	})
}

func TestRpcclient(t *testing.T) {
	if _, err := exec.LookPath("rpcclient"); err != nil {
		t.Skip("rpcclient not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("rpcclient asks the endpoint mapper on port 135, which needs root")
	}
	hub := NewHub()
	hub.SetResources(threeNodes())
	// An address of its own: port 135 of 127.0.0.1 is the cluster tests'.
	const host = "127.0.77.1"
	serverAt(t, hub, host+":0", host+":135")
	run := func(cmds string) string {
		t.Helper()
		out, err := exec.Command("rpcclient", "-U", "demo%demo", "-c", cmds, "ncacn_ip_tcp:"+host+"[sign]").CombinedOutput()
		if err != nil {
			t.Fatalf("rpcclient -c %q: %v\n%s", cmds, err, out)
		}
		return string(out)
	}
	out := run("GetInterfaceList")
	for _, want := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		if !strings.Contains(out, want) {
			t.Errorf("GetInterfaceList: no %s in\n%s", want, out)
		}
	}
	h1 := strings.TrimSpace(run("Register --net=SMBCLUSTER --ip=127.0.0.2 --client=TESTCLIENT --V1"))
	h2 := strings.TrimSpace(run("RegisterEx --net=SMBCLUSTER --ip=127.0.0.3 --client=TESTCLIENT"))
	if n := len(hub.List()); n != 2 {
		t.Fatalf("%d registrations, want 2", n)
	}
	// Registrations are not the connection's: another one waits on them.
	rs := threeNodes()
	rs[2].Available = false
	hub.SetResources(rs)
	if out := run("AsyncNotify " + h2); !strings.Contains(out, "127.0.0.3") {
		t.Errorf("AsyncNotify: %s", out)
	}
	run("UnRegister " + h1)
	run("UnRegister " + h2)
	if n := len(hub.List()); n != 0 {
		t.Errorf("%d registrations after UnRegister", n)
	}
}
