package framework

import (
	"os"
	"testing"
)

// Backend is the storage every bed node mounts through a client of its
// own, as separate machines mount one cluster filesystem (see NewBed).
//
// The bed calls Start once, before any node mounts, and MountCommand once
// per node (and again when a node's mount namespace is made anew). A
// backend keeps no per-node state: the bed owns the mount namespaces and
// tears them down — it unmounts dir and kills every process left in the
// bed's network namespaces (FUSE client daemons included) after the test.
type Backend interface {
	// Name is the backend's name in test names and logs: "local",
	// "glusterfs", "cephfs".
	Name() string
	// Start brings the backend's servers up in host, a bed host of their
	// own (network and mount namespace, fixed address host.Addr on the
	// bed's bridge, reachable from every node host; host.Command runs a
	// program there), and registers their teardown with t.Cleanup. State
	// directories come from host.TempDir, which outlive every process of
	// the bed (t.TempDir's are removed while they still run). coherent
	// picks the server-side settings the cluster requires (a volume's
	// options), false the server's defaults. It fails t on error.
	Start(t testing.TB, host *Host, coherent bool)
	// MountCommand is the command (argv) that mounts the backend's volume
	// at dir, an existing empty directory. The bed runs it inside the node
	// host's network namespace and the node's own mount namespace; it must
	// return once the mount is usable (a client daemon may stay behind).
	// coherent picks the client options the cluster requires, false the
	// client's defaults.
	MountCommand(dir string, coherent bool) []string
}

// Local is today's storage: one directory of this machine, bind-mounted
// into every node's mount namespace. One kernel, one page cache: coherent
// with or without options, and every node sees one st_dev.
type Local struct {
	dir string // set by Start
}

// Name implements Backend.
func (*Local) Name() string { return "local" }

// Start implements Backend: a fresh directory, nothing to run.
func (l *Local) Start(t testing.TB, host *Host, _ bool) {
	t.Helper()
	l.dir = host.TempDir(t)
	if err := os.Chmod(l.dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// MountCommand implements Backend.
func (l *Local) MountCommand(dir string, _ bool) []string {
	return []string{"mount", "--bind", l.dir, dir}
}
