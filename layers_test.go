package smbcluster_test

// The layering of the tree, enforced in the manner of the Go tree's own
// go/build deps_test.go: every package of the module is listed with the
// packages of the module it may import directly (test files aside). A
// package that imports anything else, or is not in the table, fails the
// test; a new package or a new edge is added here on purpose, with the
// reason in docs/ARCHITECTURE.md.

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/smbcluster/smbcluster"

// layers is the allow-list: package → the module's packages it may import.
// Names are relative to the module; the rules it encodes:
//   - smb2 imports nothing of the project but utf16le; the wire leaves
//     (utf16le, signing, sockio, auth, vfs, state) import nothing of it.
//   - vfs never imports smb2; state imports nothing of the engine.
//   - server (the engine) never imports share (the disk shares): the
//     shares plug into it; servertest, which runs both, is above both.
//   - coordinator imports nothing under node/ (it reaches the UTF-16LE
//     leaf only through internal/nthash, which imports nothing else).
//   - cli imports under node/ only the leaves a client needs: smb2,
//     smb2/signing, smb2/fscc (FSCTL payloads), auth and sockio.
var layers = map[string][]string{
	// The wire format and its leaves.
	"node/smb2/utf16le": nil,
	"node/smb2":         {"node/smb2/utf16le"},
	"node/smb2/fscc":    {"node/smb2/utf16le"},
	"node/smb2/signing": nil,
	"node/sockio":       nil,
	// The node's wall clock: time.Now plus a test-only offset (the
	// robustness suite's clock step). A leaf any node package may read.
	"node/clock": nil,
	"node/auth":  {"internal/nthash", "node/clock", "node/smb2/utf16le"},
	// The NT hash, shared by the nodes and the coordinator.
	"internal/nthash": {"node/smb2/utf16le"},

	// Storage and per-file state: nothing of the engine.
	"node/vfs":         nil,
	"node/vfs/memfs":   {"node/vfs"},
	"node/vfs/osfs":    {"node/clock", "node/vfs"},
	"node/vfs/vfstest": {"node/vfs"},
	"node/state":       nil,
	// A node's instruments: a leaf beside the wire format (command and
	// status names), so that the engine can record on it directly.
	"node/metrics": {"node/smb2"},

	// Named pipes.
	"node/ipc/dcerpc":        nil,
	"node/ipc/ndr":           {"node/smb2/utf16le"},
	"node/ipc":               {"node/ipc/dcerpc", "node/ipc/ndr"},
	"node/ipc/ncacn":         {"node/auth", "node/ipc/dcerpc", "node/ipc/ndr"},
	"node/witness":           {"node/ipc/dcerpc", "node/ipc/ndr", "node/smb2/utf16le"},
	"node/clusapi":           {"node/ipc/dcerpc", "node/ipc/ndr"},
	"node/witness/etcdstore": {"node/witness", "proto/smbcluster/state/v1"},

	// The engine, then the shares that plug into it, then what runs both.
	"node/server":     {"node/auth", "node/clock", "node/metrics", "node/smb2", "node/smb2/fscc", "node/smb2/signing", "node/sockio", "node/state"},
	"node/share":      {"node/clock", "node/ipc", "node/server", "node/smb2", "node/smb2/fscc", "node/smb2/utf16le", "node/state", "node/vfs"},
	"node/servertest": {"node/auth", "node/server", "node/share", "node/smb2", "node/smb2/signing", "node/vfs", "node/vfs/memfs", "node/vfs/osfs", "node/vfs/vfstest"},
	"node/cluster":    {"node/peer", "node/server", "node/state", "proto/smbcluster/state/v1"},
	"node/storecheck": {"proto/smbcluster/state/v1"},
	"node/nodemain":   {"node/auth", "node/clock", "node/cluster", "node/handoff", "node/ipc", "node/ipc/dcerpc", "node/ipc/ncacn", "node/clusapi", "node/mesh", "node/witness", "node/witness/etcdstore", "node/metrics", "node/peer", "node/server", "node/share", "node/state", "node/storecheck", "node/vfs/osfs", "proto/smbcluster/peer/v1", "proto/smbcluster/state/v1"},
	// Node-to-node calls: one transport (connections only, no protocol),
	// per-file state over gRPC, not the engine or shares.
	"node/mesh": nil,
	"node/peer": {"node/clock", "node/mesh", "node/state", "proto/smbcluster/peer/v1"},
	// A handed-over connection is served by the node's server (Adopt);
	// the arrival side carries the connection the server gave up
	// (server.Hijacked), reading its frames (sockio) and opening, signing
	// and sealing the READs and WRITEs it serves itself (signing).
	"node/handoff": {"node/mesh", "node/server", "node/smb2", "node/smb2/signing", "node/sockio", "proto/smbcluster/peer/v1"},
	"node":         {"node/nodemain"},

	// The admin plane: nothing under node/.
	"proto/smbcluster/admin/v1": nil,
	"proto/smbcluster/peer/v1":  nil,
	"proto/smbcluster/state/v1": nil,
	"coordinator/store":         nil,
	"coordinator/devtoken":      nil,
	"coordinator/service":       {"coordinator/store", "internal/nthash", "proto/smbcluster/admin/v1", "proto/smbcluster/state/v1"},
	"coordinator/coord":         {"coordinator/devtoken", "coordinator/service", "coordinator/store", "proto/smbcluster/state/v1"},
	"coordinator":               {"coordinator/coord", "coordinator/devtoken", "coordinator/service"},

	// The CLI: under node/ only the client's leaves.
	"cli/smbc":    {"node/auth", "node/smb2", "node/smb2/fscc", "node/smb2/signing", "node/sockio"},
	"cli/loadgen": {"cli/smbc", "node/smb2"},
	"cli/command": {"cli/loadgen", "cli/smbc", "proto/smbcluster/admin/v1"},
	"cli":         {"cli/command"},

	// Tools and tests above everything.
	"deploy":                {},
	"deploy/localcluster":   {"coordinator/coord", "coordinator/devtoken", "coordinator/service", "node/nodemain", "proto/smbcluster/admin/v1"},
	"integration":           {},
	"integration/framework": {"coordinator/coord", "proto/smbcluster/state/v1"},
	"integration/torture":   {},
	// The robustness suite: its workload is smbctl's client.
	"integration/robustness": {"cli/smbc", "integration/framework", "node/smb2"},
	// It counts etcd writes by key prefix and waits for the shard map
	// (the key layout is proto/smbcluster/state/v1's).
	"bench/clusterstat": {"proto/smbcluster/state/v1"},
	"bench/report":      {},
	"":                  {},
}

func TestLayers(t *testing.T) {
	graph := moduleImports(t)
	for _, v := range violations(graph, layers) {
		t.Error(v)
	}
}

// TestLayersCatchForbiddenImport checks the check: a forbidden edge and an
// unlisted package are both reported.
func TestLayersCatchForbiddenImport(t *testing.T) {
	graph := map[string][]string{
		"node/smb2":   {"node/smb2/utf16le", "node/server"},
		"node/vfs":    {"node/smb2"},
		"node/new":    nil,
		"coordinator": {"node/state"},
	}
	got := violations(graph, layers)
	want := []string{
		`coordinator imports node/state, which the table in layers_test.go does not allow`,
		`node/new is not in the table in layers_test.go`,
		`node/smb2 imports node/server, which the table in layers_test.go does not allow`,
		`node/vfs imports node/smb2, which the table in layers_test.go does not allow`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// violations lists, sorted, every import of graph that rules does not
// allow and every package of graph that rules does not name.
func violations(graph, rules map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		allowed, ok := rules[pkg]
		if !ok {
			out = append(out, pkg+" is not in the table in layers_test.go")
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(allowed, imp) {
				out = append(out, pkg+" imports "+imp+", which the table in layers_test.go does not allow")
			}
		}
	}
	slices.Sort(out)
	return out
}

// moduleImports maps every package of the module (relative name) to the
// module's packages its non-test files import.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin" || name == "run") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel := filepath.ToSlash(path)
		if rel == "." {
			rel = ""
		}
		var imports []string
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imports = append(imports, strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			}
		}
		graph[rel] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(graph) < 10 {
		t.Fatalf("found only %d packages; run from the module root", len(graph))
	}
	return graph
}
