package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Shared returns the value build made for key, building it on first use:
// something several tests of the package use (a bed takes seconds to come
// up). build gets a testing.TB of its own whose cleanups run after every
// test of the package has run (Main), whose TempDir lives as long, and
// whose failures are the failures of the test that is building it (a
// failed build fails every test that asks for key; a skip skips them). A
// test that fails while using the value marks it failed, so that its
// cleanups show their logs.
func Shared[T any](t *testing.T, key string, build func(tb testing.TB) T) T {
	t.Helper()
	noteIfFailed(t)
	shared.mu.Lock()
	e, ok := shared.m[key]
	if !ok {
		e = &sharedEntry{scope: &scope{name: key}}
		shared.m[key] = e
		shared.order = append(shared.order, e)
		func() {
			defer func() {
				if r := recover(); r != nil {
					f, ok := r.(scopeEnd)
					if !ok {
						panic(r)
					}
					e.end = &f
				}
			}()
			e.value = build(e.scope)
		}()
	}
	shared.mu.Unlock()
	if e.end != nil {
		if e.end.skip {
			t.Skip(e.end.msg)
		}
		t.Fatalf("shared %s: %s", key, e.end.msg)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.scope.Fail()
		}
	})
	return e.value.(T)
}

var shared = struct {
	mu    sync.Mutex
	m     map[string]*sharedEntry
	order []*sharedEntry
}{m: map[string]*sharedEntry{}}

type sharedEntry struct {
	scope *scope
	value any
	end   *scopeEnd // the build failed or skipped
}

// endShared runs the shared values' cleanups, the last built first, and
// reports whether one failed.
func endShared() (failed bool) {
	for i := len(shared.order) - 1; i >= 0; i-- {
		s := shared.order[i].scope
		s.runCleanups()
		failed = failed || s.errored
	}
	return failed
}

// scopeEnd is what a scope's Fatal and Skip panic with, for Shared to
// recover.
type scopeEnd struct {
	msg  string
	skip bool
}

// scope is the testing.TB of a shared value. The methods the framework
// calls are its own; any other panics (the embedded TB is nil).
type scope struct {
	testing.TB
	name string

	mu       sync.Mutex
	cleanups []func()
	failed   bool // a test using the value failed, or Error was called
	errored  bool // Error was called: the run fails
}

func (s *scope) Helper()      {}
func (s *scope) Name() string { return s.name }

func (s *scope) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *scope) runCleanups() {
	for {
		s.mu.Lock()
		if len(s.cleanups) == 0 {
			s.mu.Unlock()
			return
		}
		f := s.cleanups[len(s.cleanups)-1]
		s.cleanups = s.cleanups[:len(s.cleanups)-1]
		s.mu.Unlock()
		f()
	}
}

func (s *scope) TempDir() string {
	dir, err := os.MkdirTemp("", sharedDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		s.Fatal(err)
	}
	s.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// sharedDirPrefix starts the name of a shared value's temporary
// directory, followed by the test process's pid: a bed's start removes
// those of dead processes (sweepSharedDirs).
const sharedDirPrefix = "smbc-shared-"

// sweepSharedDirs removes the temporary directories of shared values whose
// test process is gone (killed before its cleanups ran).
func sweepSharedDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sharedDirPrefix+"*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), sharedDirPrefix), "-", 2)[0])
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil {
			continue
		}
		os.RemoveAll(d)
	}
}

func (s *scope) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}

func (s *scope) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *scope) Log(args ...any) { s.Logf("%s", fmt.Sprint(args...)) }
func (s *scope) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, s.name+": "+format+"\n", args...)
}

func (s *scope) Errorf(format string, args ...any) {
	s.Logf(format, args...)
	s.mu.Lock()
	s.failed, s.errored = true, true
	s.mu.Unlock()
}
func (s *scope) Error(args ...any) { s.Errorf("%s", fmt.Sprint(args...)) }

func (s *scope) Fatalf(format string, args ...any) {
	s.Fail()
	panic(scopeEnd{msg: fmt.Sprintf(format, args...)})
}
func (s *scope) Fatal(args ...any) { s.Fatalf("%s", fmt.Sprint(args...)) }
func (s *scope) FailNow()          { s.Fatalf("failed") }

func (s *scope) Skipf(format string, args ...any) {
	panic(scopeEnd{msg: fmt.Sprintf(format, args...), skip: true})
}
func (s *scope) Skip(args ...any) { s.Skipf("%s", fmt.Sprint(args...)) }
func (s *scope) SkipNow()         { s.Skipf("skipped") }

// Within runs f, which may call life's Fatal (a shared value's scope,
// past its build), as part of test t: a fatal failure of life fails t.
func Within(t testing.TB, life testing.TB, f func()) {
	t.Helper()
	if _, ok := life.(*scope); !ok {
		f()
		return
	}
	var end *scopeEnd
	func() {
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(scopeEnd)
				if !ok {
					panic(r)
				}
				end = &e
			}
		}()
		f()
	}()
	if end != nil {
		t.Fatal(end.msg)
	}
}
