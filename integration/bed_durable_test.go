package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestBedDurableFailover: durable and persistent handles survive the
// death (kill -9) or the pause (SIGSTOP past its lease) of the node holding
// them when every node is its own host with its own GlusterFS mount: the
// file's owner keeps the open's share modes and lock in force meanwhile,
// the client reconnects through a survivor, and every byte it was
// answered for is in the file, read back through another node's mount.
func TestBedDurableFailover(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       failoverMode
		persistent bool
	}{
		{"Kill", failoverKill, false},
		{"Persistent", failoverKill, true},
		{"Stop", failoverStop, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Contains(bedBackends, "glusterfs") {
				t.Skip("SMBCLUSTER_BED_BACKENDS does not name glusterfs")
			}
			b := bedFor(t, "glusterfs", false)
			b.MustSMBCtl(t, "user", "add", "kim", "--password", "Kim-Pass-1")
			t.Cleanup(func() { b.SMBCtl(t, "user", "rm", "kim") })
			// The bed's share, at the volume's root, checked since the bed
			// came up (a share made just before on a fresh directory is
			// checked while the scenario runs; on the loaded CI machine
			// GlusterFS answered such checks stale and the share was
			// refused mid-test — to look into: issue 22's notes).
			share, dir := bedShare, b.SharePath
			if tc.persistent {
				b.MustSMBCtl(t, "share", "set", share, "--continuous-availability")
				t.Cleanup(func() { b.SMBCtl(t, "share", "set", share, "--continuous-availability=false") })
			}
			// Node 1 comes back for the next test on the shared bed.
			t.Cleanup(func() {
				if tc.mode == failoverStop {
					b.Nodes[0].Signal(syscall.SIGCONT)
					return
				}
				b.RestartNode(t, 0)
			})
			file := fmt.Sprintf("durable-%d.bin", time.Now().UnixNano())
			durableScenario(t, durableRun{c: b.Cluster, share: share, file: file, size: 32 << 20,
				mode: tc.mode, persistent: tc.persistent, via: 1,
				kill: func() { b.KillNode(t, 0) },
				readBack: func() ([]byte, error) {
					r := b.Hosts[2].Exec(t, "cat", filepath.Join(dir, file))
					if r.ExitCode != 0 {
						return nil, fmt.Errorf("reading back through node3's mount: %s", r.Stderr)
					}
					return []byte(r.Stdout), nil
				}})
		})
	}
}
