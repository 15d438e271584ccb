package framework

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestStop: stop returns with every thread of a busy multi-threaded
// process stopped, and the process goes on after SIGCONT.
func TestStop(t *testing.T) {
	// Four busy threads (bash loops in subshells are processes; python's
	// threads are threads of one process).
	py := RequireTool(t, "python3")
	cmd := exec.Command(py, "-c", `
import threading
def spin():
    while True: pass
for _ in range(3): threading.Thread(target=spin, daemon=True).start()
spin()`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	WaitFor(t, stopWait, "four threads", func() bool {
		n, _ := threads(cmd.Process.Pid)
		return n == 4
	})
	if err := stop(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if ok, err := allStopped(cmd.Process.Pid); !ok || err != nil {
		t.Fatalf("after stop: all stopped %v, %v", ok, err)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, stopWait, "running again", func() bool {
		ok, err := allStopped(cmd.Process.Pid)
		return !ok && err == nil
	})
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := allStopped(cmd.Process.Pid); err == nil {
		t.Error("allStopped of a process that exited: no error")
	}
}
