package ipc

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// impacketRequests returns the PDUs impacket sends for a srvsvc bind and
// NetrShareEnum levels 1 and 2, as checked in by
// `testdata/impacket_client.py dump`.
func impacketRequests(t *testing.T) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/impacket_requests.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, h, _ := strings.Cut(line, " ")
		if m[name], err = hex.DecodeString(h); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestImpacketRecordedRequests feeds the bytes impacket sends to a Pipe.
func TestImpacketRecordedRequests(t *testing.T) {
	req := impacketRequests(t)
	env := testEnv()
	p := open(t, "srvsvc", env)
	out, _, err := p.Transceive(req["bind"], 4280)
	var ack dcerpc.BindAck
	if err != nil || ack.Decode(out) != nil || len(ack.Results) != 1 || ack.Results[0].Result != dcerpc.ResultAcceptance {
		t.Fatalf("bind: %x %v", out, err)
	}
	out, _, err = p.Transceive(req["share_enum_1"], 4280)
	var resp dcerpc.Response
	if err != nil || resp.Decode(out) != nil || resp.CallID != 2 {
		t.Fatalf("NetrShareEnum 1: %x %v", out, err)
	}
	got := decodeShareEnum1(t, resp.Stub)
	want := env.Shares()
	for i := range want {
		want[i].Path, want[i].CurrentUses, want[i].Flags = "", 0, 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shares %+v, want %+v", got, want)
	}
	out, _, err = p.Transceive(req["share_enum_2"], 4280)
	if err != nil || resp.Decode(out) != nil || resp.CallID != 3 || !bytes.HasSuffix(out, []byte{0, 0, 0, 0}) {
		t.Fatalf("NetrShareEnum 2: %x %v", out, err)
	}
}

// impacketEnv has enough shares that level 1 and 502 answers take several
// fragments, and a non-ASCII name.
func impacketEnv() *Env {
	env := testEnv()
	shares := env.Shares()
	shares = append(shares, ShareInfo{Name: "ünïcødé", Comment: "日本語", Path: `C:\u`})
	for i := range 150 {
		shares = append(shares, ShareInfo{Name: fmt.Sprintf("bulk%03d", i), Comment: "a share to fill fragments", Path: fmt.Sprintf(`C:\bulk\%d`, i)})
	}
	env.Shares = func() []ShareInfo { return shares }
	return env
}

// runImpacket runs testdata/impacket_client.py live mode against a Pipe and
// returns impacket's decoded results.
func runImpacket(t *testing.T, pipeName, mode string, env *Env) map[string]any {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	cmd := exec.Command("/usr/bin/python3", "testdata/impacket_client.py", "live", mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := open(t, pipeName, env)
	var result map[string]any
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "W "):
			b, err := hex.DecodeString(line[2:])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Write(b); err != nil {
				t.Fatalf("Write: %v", err)
			}
		case line == "R":
			var msg []byte
			for more := true; more; {
				var b []byte
				var err error
				b, more, err = p.Read(1024) // as an SMB READ would, continuing after STATUS_BUFFER_OVERFLOW
				if err != nil && !errors.Is(err, ErrPipeEmpty) {
					t.Fatalf("Read: %v", err)
				}
				msg = append(msg, b...)
			}
			fmt.Fprintf(stdin, "%x\n", msg)
		case strings.HasPrefix(line, "RESULT "):
			if err := json.Unmarshal([]byte(line[7:]), &result); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	stdin.Close()
	err := cmd.Wait()
	if exit, ok := err.(*exec.ExitError); ok && exit.ExitCode() == 3 {
		t.Skip("impacket is not installed (Debian python3-impacket)")
	}
	if err != nil || result == nil {
		t.Fatalf("impacket_client.py: %v\n%s", err, stderr.String())
	}
	if e, ok := result["exception"]; ok {
		t.Fatalf("impacket raised %v\n%s", e, stderr.String())
	}
	return result
}

// normalize round-trips v through JSON so that it compares with decoded JSON.
func normalize(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

func expectResult(t *testing.T, res map[string]any, key string, want any) {
	t.Helper()
	if got, w := res[key], normalize(t, want); !reflect.DeepEqual(got, w) {
		g, ws := fmt.Sprint(got), fmt.Sprint(w)
		t.Errorf("%s:\n got %.1000s\nwant %.1000s", key, g, ws)
	}
}

func TestImpacketSrvsvc(t *testing.T) {
	env := impacketEnv()
	res := runImpacket(t, "srvsvc", "srvsvc", env)
	shares := env.Shares()
	var lv0, lv1, lv2, lv501, lv502, sticky []map[string]any
	for _, s := range shares {
		lv0 = append(lv0, map[string]any{"netname": s.Name})
		l1 := map[string]any{"netname": s.Name, "type": s.Type, "remark": s.Comment}
		lv1 = append(lv1, l1)
		if s.Type&ShareTypeSpecial == 0 {
			sticky = append(sticky, l1)
		}
		l2 := map[string]any{"netname": s.Name, "type": s.Type, "remark": s.Comment, "permissions": 0,
			"max_uses": uint32(UnlimitedUses), "current_uses": s.CurrentUses, "path": s.Path, "passwd": nil}
		lv2 = append(lv2, l2)
		lv501 = append(lv501, map[string]any{"netname": s.Name, "type": s.Type, "remark": s.Comment, "flags": s.Flags})
		l502 := map[string]any{"reserved": 0, "security_descriptor": nil}
		for k, v := range l2 {
			l502[k] = v
		}
		lv502 = append(lv502, l502)
	}
	expectResult(t, res, "enum0", lv0)
	expectResult(t, res, "enum1", lv1)
	expectResult(t, res, "enum2", lv2)
	expectResult(t, res, "enum501", lv501)
	expectResult(t, res, "enum502", lv502)
	expectResult(t, res, "enum1_total", len(shares))
	expectResult(t, res, "sticky1", sticky)
	expectResult(t, res, "get0", lv0[1])
	expectResult(t, res, "get1", lv1[1])
	expectResult(t, res, "get2", lv2[1])
	expectResult(t, res, "get501", lv501[1])
	expectResult(t, res, "get502", lv502[1])
	expectResult(t, res, "get1005", map[string]any{"flags": 0x30})
	expectResult(t, res, "get_missing", errNetNameNotFound)
	expectResult(t, res, "get_badlevel", errInvalidLevel)
	expectResult(t, res, "fragmented_get1", lv1[1])
	expectResult(t, res, "server100", map[string]any{"platform_id": 500, "name": "SMBCLUSTER"})
	s101 := map[string]any{"platform_id": 500, "name": "SMBCLUSTER", "version_major": 10, "version_minor": 0,
		"type": serverType, "comment": "smbcluster node"}
	expectResult(t, res, "server101", s101)
	s102 := map[string]any{"users": uint32(0xffffffff), "disc": 15, "hidden": 0, "announce": 240, "anndelta": 3000,
		"licenses": 0, "userpath": `C:\`}
	for k, v := range s101 {
		s102[k] = v
	}
	expectResult(t, res, "server102", s102)
	expectResult(t, res, "server_badlevel", errInvalidLevel)
	expectResult(t, res, "session_enum", errNotSupported)
	if s, _ := res["bad_opnum"].(string); !strings.Contains(s, "nca_s_op_rng_error") {
		t.Errorf("bad opnum: %v", res["bad_opnum"])
	}
}

func TestImpacketWkssvc(t *testing.T) {
	res := runImpacket(t, "wkssvc", "wkssvc", testEnv())
	expectResult(t, res, "wksta100", map[string]any{"platform_id": 500, "computername": "SMBCLUSTER",
		"langroup": "WORKGROUP", "ver_major": 10, "ver_minor": 0})
	expectResult(t, res, "wksta_badlevel", errInvalidLevel)
}

func TestImpacketBindRejections(t *testing.T) {
	for mode, want := range map[string]string{
		"ndr64":   "proposed_transfer_syntaxes_not_supported",
		"wrongif": "abstract_syntax_not_supported",
	} {
		res := runImpacket(t, "srvsvc", mode, testEnv())
		if s, _ := res["bind"].(string); !strings.Contains(s, want) {
			t.Errorf("%s: bind error %v, want %s", mode, res["bind"], want)
		}
	}
}
