package torture

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const (
	parallel    = 2                 // smbtorture processes at a time
	testTimeout = 120 * time.Second // per smbtorture process
)

// TestTorture runs every allowlisted smbtorture test in its own process.
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping smbtorture")
	}
	allowPath := "allowlist.txt"
	if p := os.Getenv("SMBTORTURE_ALLOWLIST"); p != "" {
		allowPath = p // e.g. to try candidates before adding them
	}
	allow := readList(t, allowPath)
	if len(allow) == 0 {
		t.Skip("allowlist.txt is empty")
	}
	known := readList(t, "knownfail.txt")
	bin := framework.RequireTool(t, "smbtorture")
	opts := framework.Options{Users: map[string]string{
		"alice": framework.DefaultUsers["alice"],
		"bob":   framework.DefaultUsers["bob"],
	}}
	for i := range parallel {
		opts.Shares = append(opts.Shares, framework.Share{Name: fmt.Sprintf("torture%d", i)})
	}
	n := framework.Start(t, opts)

	slots := make(chan int, parallel)
	for i := range parallel {
		slots <- i
	}
	var mu sync.Mutex
	var bad []string
	t.Run("smbtorture", func(t *testing.T) {
		for _, name := range sortedKeys(allow) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				slot := <-slots
				defer func() { slots <- slot }()
				if msg := runOne(t, bin, n, opts.Shares[slot].Name, name, known); msg != "" {
					mu.Lock()
					bad = append(bad, name+": "+msg)
					mu.Unlock()
				}
			})
		}
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%d of %d allowlisted smbtorture tests did not pass:\n\t%s",
			len(bad), len(allow), strings.Join(bad, "\n\t"))
	}
}

// runOne runs one smbtorture test and returns "" when it had the expected
// outcome, or why not.
func runOne(t *testing.T, bin string, n *framework.Node, share, name string, known map[string]string) string {
	// Each test starts from an empty share, as it would alone: what an
	// earlier test in this slot left behind (smb2.delete-on-close-perms'
	// "Existing" tests leave a file whose inherited DACL grants no DELETE
	// in a directory that grants no FILE_DELETE_CHILD, which READONLY's
	// deltree then rightly cannot remove) is not this test's business.
	if err := emptyDir(n.SharePath(share)); err != nil {
		t.Fatalf("emptying share %s: %v", share, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "//"+n.Host+"/"+share,
		"--configfile="+os.DevNull,
		"-p", strconv.Itoa(n.Port),
		"-U", "alice%"+n.Users["alice"],
		"--option=torture:user2name=bob",
		"--option=torture:user2password="+n.Users["bob"],
		"--fullname", "--format=subunit",
		name)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = framework.OwnGroup()
	out, err := cmd.CombinedOutput()
	res := parseSubunit(string(out), name)
	passed := err == nil && len(res) > 0 && allSuccess(res)
	why := summarize(res, err, ctx.Err())
	reason, isKnown := known[name]
	switch {
	case passed && isKnown:
		t.Errorf("unexpected success of known failure (%s): remove it from knownfail.txt", reason)
		return "unexpected success: remove from knownfail.txt"
	case passed:
		return ""
	case isKnown:
		t.Logf("known failure (%s): %s", reason, why)
		return ""
	}
	t.Errorf("%s\n%s", why, tail(string(out), 60))
	return why
}

// emptyDir removes everything inside dir, leaving dir itself (the server
// serves it).
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// resultRE matches a subunit result line: "success: NAME", "failure: NAME [",
// "error: NAME [ multipart"; NAME may hold spaces ("smb2.ioctl.copy-chunk
// streams").
var resultRE = regexp.MustCompile(`(?m)^(success|successful|failure|fail|error|skip|xfail|uxsuccess): (.*?)(?: \[(?: multipart)?)?\r?$`)

// parseSubunit returns the result of every test at or below name.
func parseSubunit(out, name string) map[string]string {
	res := map[string]string{}
	for _, m := range resultRE.FindAllStringSubmatch(out, -1) {
		if m[2] == name || strings.HasPrefix(m[2], name+".") {
			res[m[2]] = m[1]
		}
	}
	return res
}

func allSuccess(res map[string]string) bool {
	for _, r := range res {
		if r != "success" && r != "successful" {
			return false
		}
	}
	return true
}

// summarize says in one line why a run did not pass.
func summarize(res map[string]string, err, ctxErr error) string {
	var parts []string
	for _, name := range sortedKeys(res) {
		if r := res[name]; r != "success" && r != "successful" {
			parts = append(parts, r+" "+name)
		}
	}
	if len(res) == 0 {
		parts = append(parts, "no test result reported")
	}
	if ctxErr != nil {
		parts = append(parts, fmt.Sprintf("killed after %v", testTimeout))
	} else if err != nil {
		parts = append(parts, "smbtorture: "+err.Error())
	}
	return strings.Join(parts, "; ")
}

// readList reads allowlist.txt or knownfail.txt: one test name per line,
// optionally followed by "# reason"; blank lines and comment lines ignored.
func readList(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	list := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, reason, _ := strings.Cut(sc.Text(), "#")
		if name := strings.TrimSpace(line); name != "" {
			list[name] = strings.TrimSpace(reason)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return list
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines ...]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
