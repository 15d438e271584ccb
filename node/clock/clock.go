// Package clock is the node's wall clock: time.Now, plus an offset that
// only a test sets. The robustness suite steps one node's clock by
// seconds (docs/ROBUSTNESS.md, clock-step) to see what of the cluster
// depends on the nodes' clocks agreeing; the wall clock is one per
// machine, so the step is this offset, of one node's process.
//
// The offset is enabled only when the environment variable EnvFile names
// a control file (Watch); the file holds a Go duration ("-12s", "0s"),
// re-read a few times a second. In any other process Now is time.Now.
//
// Only the wall-clock reads that another node, a client or the shared
// storage compares with its own clock go through Now: the NEGOTIATE's
// system time, file times, the moment a change-notify watch was made,
// the peer certificates' validity, Kerberos replay stamps. Durations
// measured inside one process (time.Since, timers, deadlines) stay on
// the monotonic clock.
package clock

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// EnvFile names the test-only control file of the clock's offset.
const EnvFile = "SMBCLUSTER_TEST_CLOCK_FILE"

// pollEvery is how often Watch re-reads the control file.
const pollEvery = 200 * time.Millisecond

var offset atomic.Int64

// Now is the node's wall clock: time.Now, stepped by the test offset if
// one is set. A stepped time has no monotonic reading, as a wall clock
// read after a step of the machine's clock compares by its wall reading.
func Now() time.Time {
	off := offset.Load()
	if off == 0 {
		return time.Now()
	}
	return time.Now().Add(time.Duration(off)).Round(0)
}

// Offset is the current test offset (zero outside tests).
func Offset() time.Duration { return time.Duration(offset.Load()) }

// Watch enables the test offset if EnvFile is set: it reads the control
// file now and then every pollEvery until ctx ends, logging each change.
// Without EnvFile it does nothing.
func Watch(ctx context.Context, log *slog.Logger) {
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	log.Warn("test clock offset enabled: this node's wall clock follows a control file", "file", path)
	load(path, log)
	go func() {
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				load(path, log)
			}
		}
	}()
}

// load sets the offset from the control file: a missing or empty file
// is no offset; an unreadable duration keeps the offset as it was.
func load(path string, log *slog.Logger) {
	var d time.Duration
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		if d, err = time.ParseDuration(s); err != nil {
			log.Warn("test clock offset: unreadable control file", "file", path, "err", err)
			return
		}
	}
	if old := time.Duration(offset.Swap(int64(d))); old != d {
		log.Info("test clock offset changed", "from", old, "to", d)
	}
}
