package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestImpacket runs testdata/impacket_smoke.py (impacket at SMB 3.0) and
// checks that it left the share as it found it.
func TestImpacket(t *testing.T) {
	framework.RequirePythonModule(t, "impacket.smbconnection")
	n := framework.Start(t, framework.Options{})
	script, err := filepath.Abs(filepath.Join("testdata", "impacket_smoke.py"))
	if err != nil {
		t.Fatal(err)
	}
	r := framework.RunPython(t, script, n.Host, strconv.Itoa(n.Port), shareNm, user, password())
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "PASS") {
		t.Fatalf("impacket smoke test failed:\n%s", r)
	}
	t.Logf("%s", r.Stdout)
	entries, err := os.ReadDir(n.SharePath(shareNm))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("share not empty after the script: %v", entries)
	}
}
