package torture

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestTortureWitnessTimeouts runs smbtorture's rpc.witness
// AsyncNotify_timeouts through each node of a three-node cluster at once,
// sealed: for every other node's witness interface, RegisterEx with
// keep-alive timeouts of 0, 1, 10, 100 and 120 seconds, each
// AsyncNotify answered ERROR_TIMEOUT when it runs out — 231 s of waiting
// per interface, nearly 8 minutes in all, spent idle. So it runs here,
// beside the CPU-bound TestTorture and TestTortureCluster, and not in
// the integration package, whose tests run one at a time; the other five
// rpc.witness tests run there (integration TestWitnessTorture).
func TestTortureWitnessTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping smbtorture")
	}
	bin := framework.RequireTool(t, "smbtorture")
	if target := os.Getenv(framework.EnvTarget); target != "" && target != "node" {
		t.Skipf("%s=%s: the witness is smbnode's", framework.EnvTarget, target)
	}
	t.Parallel()
	const user, password = "wit", "Wit-Pass-1"
	wport := framework.CommonFreePort(t, 3)
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3,
		NodeArgs: []string{"--witness-port", strconv.Itoa(wport), "--cluster-admin", user}})
	c.MustSMBCtl(t, "user", "add", user, "--password", password)
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	errs := make(chan error, 3)
	for n := 1; n <= 3; n++ {
		go func() {
			args := []string{"ncacn_ip_tcp:127.0.0." + strconv.Itoa(n) + "[" + strconv.Itoa(wport) + ",seal]",
				"-U", user + "%" + password, "-p", strconv.Itoa(c.Port), "--option=torture:net_name=SMBCLUSTER",
				"rpc.witness.witness.AsyncNotify_timeouts"}
			out, err := exec.Command(bin, args...).CombinedOutput()
			if !strings.Contains(string(out), "success: witness.AsyncNotify_timeouts\n") {
				err = errors.Join(err, errors.New("witness.AsyncNotify_timeouts did not succeed"))
			}
			if err != nil {
				err = fmt.Errorf("smbtorture %s: %w\n%s", strings.Join(args, " "), err, out)
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
