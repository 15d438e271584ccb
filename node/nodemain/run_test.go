package nodemain

import (
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
)

// TestServeAddressInUse: a node whose --listen or --metrics-addr is held
// by another process ends its start-up with an error naming the address
// as in use, and leaves neither of its own listeners behind.
func TestServeAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := held.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"listen", []string{"--listen", busy}},
		{"metrics", []string{"--listen", freeAddr(t), "--metrics-addr", busy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--share", "data="+t.TempDir(), "--user", "u:p")
			cfg, err := parseFlags(args, os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			err = serve(t.Context(), cfg, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), "address in use: "+busy) {
				t.Fatalf("serve on a busy address: %v", err)
			}
			for _, a := range cfg.Listen {
				if l, err := net.Listen("tcp", a); err == nil {
					l.Close()
				} else if a != busy {
					t.Errorf("%s left listening: %v", a, err)
				}
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
