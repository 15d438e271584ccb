package framework

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// EnvNodeBinary names a prebuilt smbnode binary; when set, BuildNode uses it
// instead of building ./node.
const EnvNodeBinary = "SMBNODE_BIN"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// ModuleRoot returns the directory holding the module's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// BuildNode builds ./node once per test binary and returns the path of the
// binary. It honours SMBNODE_BIN.
func BuildNode(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvNodeBinary); bin != "" {
		return bin
	}
	build.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			build.err = err
			return
		}
		dir, err := os.MkdirTemp("", "smbnode-build-")
		if err != nil {
			build.err = err
			return
		}
		build.dir = dir
		bin := filepath.Join(dir, "smbnode")
		cmd := exec.Command("go", "build", "-o", bin, "./node")
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			build.err = fmt.Errorf("go build ./node: %v\n%s", err, out.String())
			return
		}
		build.bin = bin
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// BuildNodeTags builds ./node with the build tags tags (comma-separated)
// into a directory of t's and returns the binary's path: a node built for
// one test, such as the robustness suite's deliberately broken one.
func BuildNodeTags(t testing.TB, tags string) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "smbnode-"+strings.ReplaceAll(tags, ",", "-"))
	cmd := exec.Command("go", "build", "-tags", tags, "-o", bin, "./node")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s ./node: %v\n%s", tags, err, out)
	}
	return bin
}

// Main runs the tests under the hang guard (hang.go), ends what they
// shared (Shared), prints the
// failures noted (NoteFailure; every failed test that started a server)
// and removes what BuildNode built. Call it from TestMain:
//
//	func TestMain(m *testing.M) { framework.Main(m) }
func Main(m *testing.M) {
	flag.Parse()
	disarm := armHangGuard()
	code := m.Run()
	disarm()
	if endShared() && code == 0 {
		code = 1
	}
	printSummary()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}
