package framework

import (
	"strings"
	"testing"
)

func TestLogBufferKeepsHeadAndTail(t *testing.T) {
	var b logBuffer
	b.Write([]byte("start\n"))
	chunk := strings.Repeat("x", 1<<20)
	for range 12 {
		b.Write([]byte(chunk))
	}
	b.Write([]byte("end\n"))
	s := b.String()
	if !strings.HasPrefix(s, "start\n") || !strings.HasSuffix(s, "end\n") || !strings.Contains(s, "bytes dropped") {
		t.Errorf("head/tail/marker missing (len %d)", len(s))
	}
	if len(s) > maxLog+100 {
		t.Errorf("len %d exceeds cap %d", len(s), maxLog)
	}
}

func TestPanicRE(t *testing.T) {
	for log, want := range map[string]bool{
		"time=... level=INFO msg=ok\n":                   false,
		"x\npanic: runtime error: index out of range\n":  true,
		"goroutine 7 [running]:\nmain.main()\n":          true,
		"fatal error: concurrent map writes\n":           true,
		"level=INFO msg=\"not a panic\" conn=3\n":        false,
		"level=ERROR msg=\"recovered panic\" err=x\n":    true,
		`{"level":"ERROR","msg":"handler panic"}` + "\n": true,
	} {
		if got := panicRE.MatchString(log); got != want {
			t.Errorf("panicRE(%q) = %v, want %v", log, got, want)
		}
	}
}

func TestSambaConf(t *testing.T) {
	conf := sambaConf("/tmp/x", Options{
		Addr:   "127.0.0.1:4455",
		Shares: []Share{{Name: "s", Path: "/tmp/s", Encrypt: true, ReadOnly: true}},
		Args:   []string{"server signing = mandatory"},
	})
	for _, want := range []string{
		"smb ports = 4455", "interfaces = 127.0.0.1", "lock directory = /tmp/x/lock",
		"ncalrpc dir = /tmp/x/ncalrpc", "server signing = mandatory",
		"[s]\n\tpath = /tmp/s\n\tread only = yes", "smb encrypt = required",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("smb.conf lacks %q:\n%s", want, conf)
		}
	}
}
