package service

import (
	"path/filepath"
	"testing"
)

func TestNormalizeAddress(t *testing.T) {
	good := map[string]string{
		"127.0.0.1":          "127.0.0.1:445",
		"127.0.0.1:4450":     "127.0.0.1:4450",
		"::1":                "[::1]:445",
		"[::1]":              "[::1]:445",
		"[fe80::1]:445":      "[fe80::1]:445",
		"Node-1.Example.COM": "node-1.example.com:445",
		"smb1:4450":          "smb1:4450",
	}
	for in, want := range good {
		if got, err := normalizeAddress(in); err != nil || got != want {
			t.Errorf("normalizeAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ":445", "0.0.0.0", "[::]:445", "ff02::1", "a..b", "a:b:c:445x", "h:0", "h:-1", "x_y:445", "[fe80::1%eth0]:445"} {
		if got, err := normalizeAddress(in); err == nil {
			t.Errorf("normalizeAddress(%q) = %q, want an error", in, got)
		}
	}
}

func FuzzNormalizeAddress(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "[::1]:445", "host:1", "a..b", "[", "]:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := normalizeAddress(s)
		if err != nil {
			return
		}
		again, err := normalizeAddress(n)
		if err != nil || again != n {
			t.Fatalf("%q normalizes to %q, which normalizes to %q, %v", s, n, again, err)
		}
	})
}

func FuzzCheckNames(f *testing.F) {
	for _, s := range []string{"data", "a$", "/srv/x", "IPC$", "n-1", "../x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkPath(s) == nil && (filepath.Clean(s) != s || !filepath.IsAbs(s) || s == "/") {
			t.Fatalf("checkPath accepted %q", s)
		}
		if checkShareName(s) == nil {
			for _, c := range []byte(`/\:*?"<>| `) {
				for i := 0; i < len(s); i++ {
					if s[i] == c {
						t.Fatalf("checkShareName accepted %q", s)
					}
				}
			}
		}
		_ = checkUserName(s)
		_ = checkNodeName(s)
		_ = checkText("comment", s, maxComment)
	})
}
