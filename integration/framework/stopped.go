package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopWait bounds how long stop waits for a process's threads to stop.
const stopWait = 10 * time.Second

// stop sends SIGSTOP to process pid and returns once every thread of it
// is stopped. kill(2) returns as soon as the signal is queued: until one
// of its threads has taken the group stop to the others, a thread
// already running goes on — and serves what a test sends "to a stopped
// node" (TestDurableFailoverStop's stale WRITE was answered, about one
// run in ten on a loaded machine).
func stop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	timeout := time.NewTimer(stopWait)
	defer timeout.Stop()
	tick := time.NewTicker(time.Millisecond) // the kernel's state is polled: no event to wait on
	defer tick.Stop()
	for {
		stopped, err := allStopped(pid)
		if err != nil || stopped {
			return err
		}
		select {
		case <-timeout.C:
			return fmt.Errorf("process %d: threads not stopped %v after SIGSTOP", pid, stopWait)
		case <-tick.C:
		}
	}
}

// allStopped reports whether every thread of process pid is stopped
// (state T or t in /proc/PID/task/TID/stat).
func allStopped(pid int) (bool, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false, fmt.Errorf("process %d: no threads to look at (exited?)", pid)
	}
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		// "TID (comm) S …": the state follows the last ')'; comm may
		// hold anything.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) {
			return false, fmt.Errorf("%s: unexpected %q", p, b)
		}
		switch b[i+2] {
		case 'T', 't':
		case 'Z', 'X':
			return false, fmt.Errorf("process %d exited", pid)
		default:
			return false, nil
		}
	}
	return true, nil
}

// threads returns how many threads process pid has.
func threads(pid int) (int, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	return len(tasks), err
}
