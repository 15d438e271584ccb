package framework

import (
	"cmp"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GlusterFS is a replica-3 GlusterFS volume (Debian glusterfs-server and
// glusterfs-client): glusterd and its three bricks in the bed's storage
// host (glusterd refuses loopback brick addresses, so it needs a host
// address of its own), each node its own FUSE mount (mount -t glusterfs).
// glusterd's state (/var/lib/glusterd), sockets and pid files (/run) and
// logs live in the storage host's mount namespace, over temporary
// directories: nothing of the machine's is read or written.
//
// Coherent is what the cluster requires of it: every node reads what any
// other node's mount wrote the moment the write returned, bytes and size.
// That takes both halves:
//
//   - the volume's client-side caching translators off
//     (GlusterCoherentVolumeOptions): write-behind acknowledges a write
//     before the bricks have it; read-ahead, io-cache and quick-read serve
//     reads from the mount's own memory; md-cache (stat-prefetch),
//     open-behind and readdir-ahead serve attributes, opens and listings
//     from what the mount saw before;
//   - the FUSE mount options direct-io-mode=enable (the kernel's page cache
//     of the file is bypassed, every read goes to the bricks),
//     attribute-timeout=0 and entry-timeout=0 (the kernel caches no size
//     and no name lookup).
//
// Measured on the bed (integration TestBedGlusterOptions: the nodes'
// storage check, then 200 rounds of a write through one node and a read
// through another, fresh opens, size and bytes; GlusterFS 10.3):
//
//   - the set above: served, 0 stale;
//   - the mount options only (the volume's defaults): refused by the check
//     in one run, served in another with 55 of 100 rounds stale
//     (TestBedCachingVolumeRefused holds the check to refusing it);
//   - the volume options only: served at first, refused within seconds
//     (a rename not seen, an old size);
//   - the volume options and direct-io-mode=enable without the zero
//     timeouts: refused (a rename not seen at once, an old size);
//   - the volume options and attribute-timeout=0,entry-timeout=0 without
//     direct-io-mode: served, 0 stale in one run; refused in a later one
//     under load (reads through fresh opens returned the bytes from
//     before another node's write: integration TestBedBenchIO tried it as
//     a way to zero-copy READs), so not coherent;
//   - only write-behind and stat-prefetch (md-cache) off, with
//     attribute-timeout=0,entry-timeout=0: served, 0 stale in one run —
//     the page cache is on there too, so the same doubt holds.
//
// The bed keeps the full set docs/STORAGE.md requires: it also turns off
// caches these reads do not reach (read-ahead and io-cache through a kept
// descriptor, readdir-ahead on listings).
type GlusterFS struct {
	// VolumeOff and MountOptions replace GlusterCoherentVolumeOptions and
	// GlusterCoherentMountOptions on a coherent bed when set (to find
	// what coherence takes; MountOptions "-" is none).
	VolumeOff    []string
	MountOptions string

	server string // set by Start: the storage host's address
}

// GlusterVolume is the bed's volume name.
const GlusterVolume = "smbc"

// GlusterCoherentVolumeOptions are the volume options set to "off" on a
// coherent bed.
var GlusterCoherentVolumeOptions = []string{
	"performance.write-behind",
	"performance.read-ahead",
	"performance.io-cache",
	"performance.quick-read",
	"performance.stat-prefetch",
	"performance.open-behind",
	"performance.readdir-ahead",
}

// GlusterCoherentMountOptions are the FUSE mount options of a coherent
// bed.
const GlusterCoherentMountOptions = "direct-io-mode=enable,attribute-timeout=0,entry-timeout=0"

// Name implements Backend.
func (*GlusterFS) Name() string { return "glusterfs" }

// RequireGlusterFS skips the test unless GlusterFS's server and client
// are installed.
func RequireGlusterFS(t testing.TB) {
	t.Helper()
	for _, p := range []string{"glusterd", "gluster", "glusterfs", "mount.glusterfs"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (CI installs glusterfs-server and glusterfs-client; see .ci/run)", p)
		}
	}
}

// Start implements Backend: glusterd in host, one replica-3 volume of
// three bricks (force: all three on one host), started.
func (g *GlusterFS) Start(t testing.TB, host *Host, coherent bool) {
	t.Helper()
	RequireGlusterFS(t)
	g.server = host.Addr
	host.Private(t, "/var/lib/glusterd")
	host.MustExec(t, "mkdir", "-p", "/var/log/glusterfs")
	host.Start(t, "glusterd", "glusterd", "--no-daemon", "--log-level=WARNING")
	WaitFor(t, StartDeadline, "glusterd answering on "+host.Name, func() bool {
		return host.Exec(t, "gluster", "--mode=script", "pool", "list").ExitCode == 0
	})
	bricks := host.TempDir(t)
	args := []string{"--mode=script", "volume", "create", GlusterVolume, "replica", "3"}
	for _, b := range []string{"b1", "b2", "b3"} {
		args = append(args, host.Addr+":"+filepath.Join(bricks, b))
	}
	host.MustExec(t, "gluster", append(args, "force")...)
	if coherent {
		off := GlusterCoherentVolumeOptions
		if g.VolumeOff != nil {
			off = g.VolumeOff
		}
		for _, o := range off {
			host.MustExec(t, "gluster", "--mode=script", "volume", "set", GlusterVolume, o, "off")
		}
	}
	host.MustExec(t, "gluster", "--mode=script", "volume", "start", GlusterVolume)
	WaitFor(t, StartDeadline, "the volume's three bricks online", func() bool {
		r := host.Exec(t, "gluster", "--mode=script", "volume", "status", GlusterVolume, "detail")
		return r.ExitCode == 0 && strings.Count(r.Stdout, "Online") == 3 && !strings.Contains(r.Stdout, ": N\n")
	})
}

// MountCommand implements Backend.
func (g *GlusterFS) MountCommand(dir string, coherent bool) []string {
	mount := "mount -t glusterfs "
	if opts := cmp.Or(g.MountOptions, GlusterCoherentMountOptions); coherent && opts != "-" {
		mount += "-o " + opts + " "
	}
	mount += g.server + ":/" + GlusterVolume + " " + dir
	// The FUSE client logs under /var/log/glusterfs (the host's own).
	return []string{"sh", "-c", "mkdir -p /var/log/glusterfs && exec " + mount}
}
