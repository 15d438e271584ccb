package integration

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestBedGlusterOptions measures what coherence takes of GlusterFS (run
// with SMBCLUSTER_BED_GLUSTER_OPTIONS=1; not in CI): for each set of
// volume options turned off and FUSE mount options, a two-node bed of its
// own, how the nodes' storage check decides, and then, where the share is
// served, how many of 200 write-through-one-node, read-through-the-other
// rounds are stale. The results are in framework/gluster.go.
func TestBedGlusterOptions(t *testing.T) {
	if os.Getenv("SMBCLUSTER_BED_GLUSTER_OPTIONS") == "" {
		t.Skip("a measurement: set SMBCLUSTER_BED_GLUSTER_OPTIONS=1 to run it")
	}
	all := framework.GlusterCoherentVolumeOptions
	wb, md := "performance.write-behind", "performance.stat-prefetch"
	attr := "attribute-timeout=0,entry-timeout=0"
	for _, c := range []struct {
		name  string
		off   []string
		mount string // "-": none
	}{
		{"required", all, ""},
		{"mount-options-only", []string{}, ""},
		{"volume-options-only", all, "-"},
		{"volume+attr-timeouts", all, attr},
		{"volume+direct-io", all, "direct-io-mode=enable"},
		{"write-behind+md-cache+all-mount", []string{wb, md}, ""},
		{"write-behind+md-cache+attr-timeouts", []string{wb, md}, attr},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := framework.NewBed(t, framework.BedOptions{Nodes: 2,
				Backend: &framework.GlusterFS{VolumeOff: c.off, MountOptions: c.mount}})
			b.MustSMBCtl(t, "user", "add", bedUser, "--password", bedPass)
			b.MustSMBCtl(t, "share", "add", bedShare, b.SharePath)
			framework.WaitFor(t, 2*clusterDeadline, "the check decided", func() bool {
				decided := 0
				for _, v := range shareViews(t, b, bedShare) {
					if v.State == "serving" || v.State == "refused" {
						decided++
					}
				}
				return decided == len(b.Nodes)
			})
			var states []string
			for _, v := range shareViews(t, b, bedShare) {
				states = append(states, v.Node+" "+v.State+" "+v.Reason)
			}
			t.Logf("off %v, mount %q: %s", c.off, c.mount, strings.Join(states, "; "))
			if !allViews(t, b, "serving") {
				return
			}
			w, r := bedConnect(t, b.Nodes[0]), bedConnect(t, b.Nodes[1])
			stale, rounds := 0, 0
			for i := range 200 {
				got, want, err := writeReadRound(w, r, r, fmt.Sprintf("options-%d", i%3), i)
				if err != nil {
					t.Logf("round %d: %v (the share refused meanwhile?)", i, err)
					break
				}
				rounds++
				if !bytes.Equal(got, want) {
					stale++
				}
			}
			t.Logf("%s: %d of %d rounds stale; finally %v", c.name, stale, rounds, shareViews(t, b, bedShare))
		})
	}
}
