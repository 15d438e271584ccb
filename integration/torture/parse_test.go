package torture

import (
	"reflect"
	"testing"
)

func TestParseSubunit(t *testing.T) {
	out := `smbtorture 4.17.12-Debian
time: 2026-11-30 05:09:26.930234
test: smb2.read.eof
success: smb2.read.eof
test: smb2.read.bug14607
skip: smb2.read.bug14607 [
reason
]
test: smb2.readx.other
failure: smb2.readx.other [
]
failure: smb2.read.access [
../../source4/torture/smb2/read.c:1: status was X
]
test: smb2.read.with space
error: smb2.read.with space [ multipart
]
success: smb2.ioctl.copy-chunk streams
`
	got := parseSubunit(out, "smb2.read")
	want := map[string]string{
		"smb2.read.eof":        "success",
		"smb2.read.bug14607":   "skip",
		"smb2.read.access":     "failure",
		"smb2.read.with space": "error",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseSubunit = %v, want %v", got, want)
	}
	if allSuccess(got) {
		t.Error("allSuccess with a skip and a failure")
	}
	if !allSuccess(parseSubunit(out, "smb2.read.eof")) {
		t.Error("smb2.read.eof alone should pass")
	}
	if got := parseSubunit(out, "smb2.ioctl.copy-chunk streams"); got["smb2.ioctl.copy-chunk streams"] != "success" {
		t.Errorf("a name with a space: %v", got)
	}
}
