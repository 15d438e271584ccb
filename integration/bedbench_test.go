package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// EnvBenchBed runs TestBedBenchIO with that many paired runs per cell
// (make bench-bed sets it).
const EnvBenchBed = "SMBCLUSTER_BENCH_BED"

// bedBenchMounts are the GlusterFS client setups TestBedBenchIO measures:
// the set docs/STORAGE.md requires (direct-io: no page cache on the
// nodes, so no zero-copy READ). (The same volume options with the page
// cache on and attribute-timeout=0,entry-timeout=0, tried as a way to
// zero-copy READs, are refused by the storage check: fresh opens read
// stale bytes.)
//
// The second setup turns the volume's eager locking off as well: with it
// on, a replica-3 volume's client keeps the file's inode lock between its
// writes, and three mounts writing one file (three nodes serving one
// client's connections) hand it back and forth.
var bedBenchMounts = []struct {
	name, options string
	volumeOff     []string // nil: the required set
}{
	{"direct-io", "", nil},
	{"direct-io, eager-lock off", "", append(slices.Clone(framework.GlusterCoherentVolumeOptions), "cluster.eager-lock")},
}

// TestBedBenchIO measures one client's 1 MiB READ and WRITE against the
// three nodes of a GlusterFS bed and against smbd, one per node host over
// the same mount, in one run (skipped unless SMBCLUSTER_BENCH_BED=RUNS):
// for each mount setup of bedBenchMounts, a bed of its own; smbctl bench
// with three connections, connection i to host i's server (ours: node i's
// public address; Samba: smbd on host i over the host's FUSE mount, and a
// second smbd on host i reaching the volume through libgfapi, Samba's
// vfs_glusterfs: what a native client backend gives), and ours again as
// one session with a channel to each node (--multichannel). Runs are paired and
// alternate which server goes first; and, for comparison, the three
// connections all to node 1 and all to host 1's smbd (one writer's mount).
// The log ends with a table of medians and ratios (bench/README.md has
// the results).
func TestBedBenchIO(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv(EnvBenchBed))
	if runs <= 0 {
		t.Skipf("set %s=RUNS to measure (make bench-bed)", EnvBenchBed)
	}
	framework.RequireGlusterFS(t)
	if m, _ := filepath.Glob("/usr/lib/*/samba/vfs/glusterfs.so"); len(m) == 0 {
		t.Fatal("Samba's vfs_glusterfs is not installed (apt-get install samba-vfs-modules)")
	}
	smbctl := framework.BuildSMBCtl(t)
	var rows []string
	for _, m := range bedBenchMounts {
		t.Run(m.name, func(t *testing.T) {
			b := framework.NewBed(t, framework.BedOptions{Backend: &framework.GlusterFS{MountOptions: m.options, VolumeOff: m.volumeOff}})
			b.MustSMBCtl(t, "user", "add", bedUser, "--password", bedPass)
			b.MustSMBCtl(t, "share", "add", bedShare, b.SharePath)
			framework.WaitFor(t, 2*clusterDeadline, "every node serving "+bedShare, func() bool {
				return allViews(t, b, "serving")
			})
			zeroCopy := 0
			for _, v := range shareViews(t, b, bedShare) {
				if v.ZeroCopy {
					zeroCopy++
				}
			}
			var ours, samba, gfapi []string
			tuned := []string{"use sendfile = yes", "aio read size = 0", "aio write size = 1", "strict sync = no"}
			for i, h := range b.Hosts {
				ours = append(ours, b.PublicAddr(i))
				s := framework.StartSambaOn(t, h, framework.Options{
					Addr:   net.JoinHostPort(h.Addr, "445"),
					Users:  map[string]string{bedUser: bedPass},
					Shares: []framework.Share{{Name: bedShare, Path: b.SharePath}},
					Args:   tuned,
				})
				samba = append(samba, s.Addr)
				// The same volume through libgfapi, no FUSE: what a native
				// client backend would give.
				g := framework.StartSambaOn(t, h, framework.Options{
					Addr:   net.JoinHostPort(h.Addr, "1445"),
					Users:  map[string]string{bedUser: bedPass},
					Shares: []framework.Share{{Name: bedShare, Path: "/"}},
					Args: append(slices.Clone(tuned), "vfs objects = glusterfs", "glusterfs:volume = "+framework.GlusterVolume,
						"glusterfs:volfile_server = "+b.Storage.Addr, "kernel share modes = no"),
				})
				gfapi = append(gfapi, g.Addr)
			}
			for _, rw := range []string{"read", "write"} {
				cell := map[string][]float64{}
				for run := range runs {
					sides := []string{"ours", "samba", "ours-mc", "samba-gfapi", "ours-1", "samba-1"}
					if run%2 == 1 {
						slices.Reverse(sides)
					}
					for _, side := range sides {
						servers, extra := ours, []string(nil)
						switch side {
						case "samba":
							servers = samba
						case "samba-gfapi":
							servers = gfapi
						case "ours-1":
							servers = slices.Repeat(ours[:1], len(ours))
						case "samba-1":
							servers = slices.Repeat(samba[:1], len(samba))
						case "ours-mc":
							extra = []string{"--multichannel"}
						}
						mibs := bedBench(t, smbctl, servers, rw, extra)
						t.Logf("%s %s run %d %s: %.0f MiB/s", m.name, rw, run+1, side, mibs)
						cell[side] = append(cell[side], mibs)
					}
				}
				rows = append(rows, fmt.Sprintf("| %s (zero-copy on %d of %d nodes) | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f× | %.2f× | %.2f× | %.2f× |",
					m.name, zeroCopy, len(b.Nodes), rw, median(cell["ours"]), median(cell["ours-mc"]), median(cell["samba"]),
					median(cell["samba-gfapi"]), median(cell["ours-1"]), median(cell["samba-1"]),
					pairedRatio(cell["ours"], cell["samba"]), pairedRatio(cell["ours-mc"], cell["samba"]),
					pairedRatio(cell["ours"], cell["samba-gfapi"]), pairedRatio(cell["ours-1"], cell["samba-1"])))
			}
		})
	}
	t.Logf("one client, 1 MiB, 3 connections (one per host), iodepth 16, %d paired runs, medians in MiB/s:\n"+
		"| GlusterFS mount | rw | ours (3 sessions) | ours (1 session, 3 channels) | smbd (3 sessions) | smbd vfs_glusterfs (3 sessions) | ours, all on node 1 | smbd, all on host 1 | ours/smbd | ours mc/smbd | ours/smbd gfapi | ours/smbd on one host |\n"+
		"|---|---|---|---|---|---|---|---|---|---|---|---|\n%s", runs, strings.Join(rows, "\n"))
}

// bedBench runs one smbctl bench cell of 1 MiB rw against servers (one
// connection each) and returns its MiB/s.
func bedBench(t *testing.T, smbctl string, servers []string, rw string, extra []string) float64 {
	t.Helper()
	args := append([]string{"bench", "--server", strings.Join(servers, ","), "--share", bedShare,
		"--user", bedUser, "--password", bedPass, "--rw", rw, "--bs", "1m", "--conns", strconv.Itoa(len(servers)),
		"--iodepth", "16", "--size", "256m", "--runtime", "5s", "--warmup", "1s",
		"--file", "bed-bench.dat", "--keep", "--no-progress", "-o", "json"}, extra...)
	out, err := exec.Command(smbctl, args...).Output()
	if err != nil {
		t.Fatalf("smbctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var r struct {
		Total struct {
			MiBps float64 `json:"mib_s"`
		} `json:"total"`
		Mismatched int64 `json:"mismatched_blocks"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("smbctl bench output: %v\n%s", err, out)
	}
	if r.Mismatched != 0 {
		t.Fatalf("%d blocks read back wrong", r.Mismatched)
	}
	return r.Total.MiBps
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// pairedRatio is the median of a[i]/b[i].
func pairedRatio(a, b []float64) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return median(r)
}

// TestBedBenchCluster is make bench-cluster's open/close cells on the
// GlusterFS bed (skipped unless SMBCLUSTER_BENCH_BED=RUNS): smbctl bench
// --rw open with 4 connections, iodepth 1, every worker over its own 100
// files, the same with a 4 KiB read after each open, and every worker on
// one hot file — with every connection on node 1, then spread over the
// three nodes (connection i on node i mod 3), runs alternating which goes
// first. What it measures is what coordination between separate hosts
// costs: spread over one node, where one host would give about 100 %.
// The same cells against smbd, one per host over the host's mount (which
// coordinates nothing between hosts), show what the storage alone costs
// when three mounts work in one directory.
func TestBedBenchCluster(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv(EnvBenchBed))
	if runs <= 0 {
		t.Skipf("set %s=RUNS to measure (make bench-bed)", EnvBenchBed)
	}
	framework.RequireGlusterFS(t)
	smbctl := framework.BuildSMBCtl(t)
	b := framework.NewBed(t, framework.BedOptions{Backend: &framework.GlusterFS{}})
	b.MustSMBCtl(t, "user", "add", bedUser, "--password", bedPass)
	b.MustSMBCtl(t, "share", "add", bedShare, b.SharePath)
	framework.WaitFor(t, 2*clusterDeadline, "every node serving "+bedShare, func() bool {
		return allViews(t, b, "serving")
	})
	var spread, samba []string
	for i, h := range b.Hosts {
		spread = append(spread, b.PublicAddr(i))
		s := framework.StartSambaOn(t, h, framework.Options{
			Addr:   net.JoinHostPort(h.Addr, "445"),
			Users:  map[string]string{bedUser: bedPass},
			Shares: []framework.Share{{Name: bedShare, Path: b.SharePath}},
		})
		samba = append(samba, s.Addr)
	}
	places := map[string][]string{"ours-1": spread[:1], "ours": spread, "samba-1": samba[:1], "samba": samba}
	var rows []string
	for _, c := range []struct {
		name string
		args []string
	}{
		{"open+close, own files", []string{"--files", "100"}},
		{"open+4 KiB read+close, own files", []string{"--files", "100", "--open-read"}},
		{"open+close, one hot file", []string{"--hot-file"}},
	} {
		rates := map[string][]float64{}
		for run := range runs {
			sides := []string{"ours-1", "ours", "samba-1", "samba"}
			if run%2 == 1 {
				slices.Reverse(sides)
			}
			for _, side := range sides {
				args := append([]string{"bench", "--server", strings.Join(places[side], ","), "--share", bedShare,
					"--user", bedUser, "--password", bedPass, "--rw", "open", "--conns", "4", "--iodepth", "1",
					"--runtime", "3s", "--warmup", "1s", "--no-progress", "-o", "json"}, c.args...)
				out, err := exec.Command(smbctl, args...).Output()
				if err != nil {
					t.Fatalf("smbctl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				var r struct {
					Rate float64 `json:"ops_s"`
				}
				if err := json.Unmarshal(out, &r); err != nil {
					t.Fatalf("smbctl bench output: %v\n%s", err, out)
				}
				t.Logf("%s run %d %s: %.0f per s", c.name, run+1, side, r.Rate)
				rates[side] = append(rates[side], r.Rate)
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %.0f | %.0f | %.0f %% | %.0f | %.0f | %.0f %% |", c.name,
			median(rates["ours-1"]), median(rates["ours"]), 100*pairedRatio(rates["ours"], rates["ours-1"]),
			median(rates["samba-1"]), median(rates["samba"]), 100*pairedRatio(rates["samba"], rates["samba-1"])))
	}
	t.Logf("GlusterFS bed, 4 connections, iodepth 1, %d paired runs, medians per second:\n"+
		"| cell | ours, node 1 | ours, 3 hosts | spread / one (paired) | smbd, host 1 | smbd, 3 hosts | spread / one (paired) |\n"+
		"|---|---|---|---|---|---|---|\n%s",
		runs, strings.Join(rows, "\n"))
}
