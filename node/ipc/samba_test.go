package ipc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// samba runs testdata/samba_ndr.py, skipping the test when the Samba Python
// bindings (Debian python3-samba) are missing.
func samba(t *testing.T, stdin string, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	cmd := exec.Command("/usr/bin/python3", append([]string{"testdata/samba_ndr.py"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if exit, ok := err.(*exec.ExitError); ok && exit.ExitCode() == 3 {
		t.Skip("Samba Python bindings are not installed (Debian python3-samba)")
	}
	if err != nil {
		t.Fatalf("samba_ndr.py %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// TestSambaNDR sends the stubs Samba's client code encodes and has Samba's
// NDR decode the answers: what smbclient -L and rpcclient would see.
func TestSambaNDR(t *testing.T) {
	reqs := samba(t, "", "requests")
	env := impacketEnv()
	srv, wks := open(t, "srvsvc", env), open(t, "wkssvc", env)
	bindSrvsvc(t, srv)
	wksBind := strings.ReplaceAll(windowsBind, "c8 4f 32 4b 70 16 d3 01 12 78 5a 47 bf 6e e1 88 03 00 00 00",
		"98 d0 ff 6b 12 a1 10 36 98 33 46 c3 f8 7e 34 5a 01 00 00 00")
	out, _, err := wks.Transceive(unhex(t, wksBind), 4280)
	if err != nil || out[2] != dcerpc.TypeBindAck {
		t.Fatalf("wkssvc bind: %x %v", out, err)
	}
	var answers strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(string(reqs)), "\n") {
		f := strings.Fields(line)
		opnum, _ := strconv.Atoi(f[1])
		stub, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatal(err)
		}
		p := srv
		if strings.HasPrefix(f[0], "wksta") {
			p = wks
		}
		out, st := call(t, p, uint32(10+i), 0, uint16(opnum), stub)
		if st != 0 {
			t.Fatalf("%s: fault %#x", f[0], st)
		}
		fmt.Fprintf(&answers, "%s %x\n", f[0], out)
	}
	var got map[string]any
	if err := json.Unmarshal(samba(t, answers.String(), "decode"), &got); err != nil {
		t.Fatal(err)
	}
	shares := env.Shares()
	var lv1, lv502 []map[string]any
	for _, s := range shares {
		lv1 = append(lv1, map[string]any{"name": s.Name, "type": s.Type, "comment": s.Comment})
		lv502 = append(lv502, map[string]any{"name": s.Name, "type": s.Type, "comment": s.Comment,
			"permissions": 0, "max_users": uint32(UnlimitedUses), "current_users": s.CurrentUses, "path": s.Path, "password": nil})
	}
	expectResult(t, got, "share_enum_all_1", map[string]any{"result": 0, "totalentries": len(shares), "shares": lv1})
	expectResult(t, got, "share_enum_all_502", map[string]any{"result": 0, "totalentries": len(shares), "shares": lv502})
	expectResult(t, got, "share_get_info_1", map[string]any{"result": 0, "info": lv1[1]})
	expectResult(t, got, "share_get_info_1005", map[string]any{"result": 0, "info": map[string]any{"dfs_flags": 0x30}})
	expectResult(t, got, "srv_get_info_101", map[string]any{"result": 0, "info": map[string]any{"platform_id": 500,
		"server_name": "SMBCLUSTER", "version_major": 10, "version_minor": 0, "server_type": serverType, "comment": "smbcluster node"}})
	expectResult(t, got, "wksta_get_info_100", map[string]any{"result": 0, "info": map[string]any{"platform_id": 500,
		"server_name": "SMBCLUSTER", "domain_name": "WORKGROUP", "version_major": 10, "version_minor": 0}})
}
