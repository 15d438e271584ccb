package clock

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNowFollowsTheControlFile(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if d := Now().Sub(time.Now()); d > time.Second || d < -time.Second {
		t.Fatalf("without a control file Now is %v off", d)
	}
	path := filepath.Join(t.TempDir(), "clock")
	t.Setenv(EnvFile, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer offset.Store(0)
	Watch(ctx, log) // no file yet: no offset
	if Offset() != 0 {
		t.Fatalf("offset %v without a file", Offset())
	}
	if err := os.WriteFile(path, []byte("-12s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for Offset() != -12*time.Second && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // a poll of the watcher's state
	}
	if Offset() != -12*time.Second {
		t.Fatalf("offset %v, want -12s", Offset())
	}
	if d := time.Now().Sub(Now()); d < 11*time.Second || d > 13*time.Second {
		t.Errorf("Now is %v behind time.Now, want 12s", d)
	}
	os.WriteFile(path, []byte("bogus"), 0o644)
	load(path, log)
	if Offset() != -12*time.Second {
		t.Errorf("an unreadable file changed the offset to %v", Offset())
	}
	os.WriteFile(path, []byte("0s"), 0o644)
	load(path, log)
	if Offset() != 0 {
		t.Errorf("offset %v after 0s", Offset())
	}
}
