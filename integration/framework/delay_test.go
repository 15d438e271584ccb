package framework

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDelay: a round trip between two namespaces through a host delayed
// by 100 ms (both ways) takes at least 200 ms, and none after Heal.
func TestDelay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	for _, p := range []string{"ip", "nsenter", "iptables"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	id := strconv.Itoa(os.Getpid() % 100000)
	a, b := "smbc-dly-a"+id, "smbc-dly-b"+id
	for _, ns := range []string{a, b} {
		mustRun(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	mustRun(t, "ip", "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b)
	mustRun(t, "ip", "-n", a, "addr", "add", "10.254.77.1/30", "dev", "va")
	mustRun(t, "ip", "-n", b, "addr", "add", "10.254.77.2/30", "dev", "vb")
	for _, c := range [][]string{{a, "va"}, {b, "vb"}, {a, "lo"}, {b, "lo"}} {
		mustRun(t, "ip", "-n", c[0], "link", "set", c[1], "up")
	}
	h := &Host{Name: "a", NetNS: a, MountNS: "/proc/self/ns/mnt"}

	var l net.Listener
	if err := inNetNS(b, func() (err error) { l, err = net.Listen("tcp", "10.254.77.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	var c net.Conn
	if err := inNetNS(a, func() (err error) { c, err = net.DialTimeout("tcp", l.Addr().String(), 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rtt := func() time.Duration {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		buf := []byte("ping")
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	// The least of five round trips: what the link adds, not what a
	// loaded machine adds to one of them.
	least := func() time.Duration {
		d := rtt()
		for range 4 {
			d = min(d, rtt())
		}
		return d
	}
	if d := least(); d > 100*time.Millisecond {
		t.Fatalf("round trip %v before the delay", d)
	}
	h.Delay(t, 100*time.Millisecond, 10*time.Millisecond)
	if d := least(); d < 180*time.Millisecond || d > 2*time.Second {
		t.Errorf("round trip %v through a link delayed 100±10 ms each way", d)
	}
	h.Heal(t)
	if d := least(); d > 100*time.Millisecond {
		t.Errorf("round trip %v after Heal", d)
	}
	if out, _ := exec.Command("ip", "netns", "exec", a, "iptables", "-S").Output(); strings.Contains(string(out), "NFQUEUE") {
		t.Errorf("rules left after Heal:\n%s", out)
	}
}
