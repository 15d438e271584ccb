package integration

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
)

// The bed's tests run the cluster as deployed: each node in a host of its
// own with its own client's mount of the storage (framework.NewBed). A
// bed comes up once per backend and options for the whole package
// (bedFor) and is left as found by every test.

const (
	bedUser  = "gina"
	bedPass  = "Gina-Pass-1"
	bedShare = "data"
)

// bedBackends are the backends the coherent tests run on: the local
// directory, GlusterFS and CephFS (each skipped where its programs are
// not installed), or those SMBCLUSTER_BED_BACKENDS names
// ("local,glusterfs").
var bedBackends = bedBackendsFromEnv()

func bedBackendsFromEnv() []string {
	v := os.Getenv("SMBCLUSTER_BED_BACKENDS")
	if v == "" {
		return []string{"local", "glusterfs", "cephfs"}
	}
	return strings.Split(v, ",")
}

// bedFor returns a bed of backend ("local", "glusterfs", "cephfs", or
// "glusterfs-caching-volume": the coherent mount options on a volume with
// its caching translators on) with the options the cluster requires, or
// the client's defaults, with user gina and share data at its share
// path. The coherent beds, which most tests use, are shared by the
// package's tests; any other is the test's own, gone when it ends: on a
// 2-core machine every bed alive costs the others (three etcd members
// each), and with seven alive a loaded etcd cost a node its lease.
func bedFor(t *testing.T, backend string, defaults bool) *framework.Bed {
	t.Helper()
	if testing.Short() {
		t.Skip("the multi-host test bed takes seconds to come up: not in -short")
	}
	if defaults || backend == "glusterfs-caching-volume" {
		return startBed(t, backend, defaults)
	}
	return framework.Shared(t, "bed-"+backend, func(tb testing.TB) *framework.Bed {
		return startBed(tb, backend, defaults)
	})
}

// startBed brings bedFor's bed up for tb.
func startBed(tb testing.TB, backend string, defaults bool) *framework.Bed {
	tb.Helper()
	framework.RequireBed(tb)
	var be framework.Backend
	switch backend {
	case "local":
		be = &framework.Local{}
	case "glusterfs":
		framework.RequireGlusterFS(tb)
		be = &framework.GlusterFS{}
	case "glusterfs-caching-volume":
		// The coherent FUSE mount options, the volume's caching
		// translators left on.
		framework.RequireGlusterFS(tb)
		be = &framework.GlusterFS{VolumeOff: []string{}}
	case "cephfs":
		be = &framework.CephFS{}
	default:
		tb.Fatalf("no backend %q", backend)
	}
	b := framework.NewBed(tb, framework.BedOptions{Backend: be, ClientDefaults: defaults})
	b.MustSMBCtl(tb, "user", "add", bedUser, "--password", bedPass)
	b.MustSMBCtl(tb, "share", "add", bedShare, b.SharePath)
	return b
}

// shareView is one node's view of a share as `smbctl share ls -o json`
// lists it.
type shareView struct {
	Node   string `json:"node"`
	State  string `json:"state"` // serving, checking, refused, unchecked
	Reason string `json:"reason"`
	// ZeroCopy: the node answers READs of the share from the page cache
	// (sendfile, no-wait reads), the storage check having found them fresh.
	ZeroCopy bool `json:"zero_copy"`
}

// shareViews returns the nodes' views of share name.
func shareViews(t *testing.T, b *framework.Bed, name string) []shareView {
	t.Helper()
	var shares []struct {
		Name  string      `json:"name"`
		Views []shareView `json:"views"`
	}
	b.SMBCtlJSON(t, &shares, "share", "ls")
	for _, s := range shares {
		if s.Name == name {
			return s.Views
		}
	}
	t.Fatalf("share %s is not listed", name)
	return nil
}

// allViews reports whether every node of b has a view of share data in
// state.
func allViews(t *testing.T, b *framework.Bed, state string) bool {
	views := shareViews(t, b, bedShare)
	for _, n := range b.Nodes {
		if !slices.ContainsFunc(views, func(v shareView) bool { return v.Node == n.Name && v.State == state }) {
			return false
		}
	}
	return true
}

// bedConnect logs gina on through n's public address and connects share
// data, waiting for the node to serve it.
func bedConnect(t *testing.T, n *framework.ClusterNode) *servertest.Conn {
	t.Helper()
	return clusterSession(t, n, bedUser, bedPass, bedShare)
}
