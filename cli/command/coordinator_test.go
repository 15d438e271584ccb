package command

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/service"
	"github.com/smbcluster/smbcluster/coordinator/store"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

const testToken = "cli-test-token-0123456789"

// testNow is the coordinator's clock: every time it records is this one.
var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// etcd is the embedded etcd every coordinator test shares (TestMain).
var etcd *clientv3.Client

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "smbctl-test-etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	endpoints, stop, err := store.StartEmbedded(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	if etcd, err = clientv3.New(clientv3.Config{Endpoints: endpoints}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer etcd.Close()
	return m.Run()
}

// coord is a real coordinator over an in-memory connection, with the
// cluster state in etcd emptied first.
type coord struct {
	t    *testing.T
	l    *bufconn.Listener
	vars map[string]string // smbctl's environment
	out  strings.Builder   // the transcript
	// dialer reaches the coordinator: c.dial; nil dials TCP for real.
	dialer func(ctx context.Context, addr string) (net.Conn, error)
	tmp    string // a directory for files, shown as $TMP in the transcript
}

func newCoord(t *testing.T) *coord {
	t.Helper()
	if _, err := etcd.Delete(t.Context(), statev1.Root, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	sealer, err := statev1.NewSealer([]byte("cli test cluster secret, 32 bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	c := &coord{t: t, l: bufconn.Listen(1 << 20),
		vars: map[string]string{"SMBCTL_TOKEN": testToken, "SMBCTL_INSECURE": "1", "HOME": t.TempDir()}, tmp: t.TempDir()}
	c.dialer = c.dial
	g := service.NewGRPCServer(service.Options{Store: store.New(etcd), Sealer: sealer, Token: testToken,
		ShareRoots: []string{"/srv"}, Version: "v0.0.0-test", Now: func() time.Time { return testNow }})
	c.serve(g)
	return c
}

func (c *coord) serve(g *grpc.Server) {
	go g.Serve(c.l)
	c.t.Cleanup(g.Stop)
}

func (c *coord) dial(ctx context.Context, _ string) (net.Conn, error) { return c.l.DialContext(ctx) }

// smbctl runs one command with stdin and records it in the transcript.
func (c *coord) smbctl(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return c.vars[k] },
		stdin: strings.NewReader(stdin), dial: c.dialer,
		readSecret: func(string) (string, error) { return "", fmt.Errorf("no terminal in tests") }}
	code = run(c.t.Context(), e, args)
	fmt.Fprintf(&c.out, "$ smbctl %s\n", c.normalize(shellJoin(args)))
	if stdin != "" {
		c.out.WriteString("(stdin piped)\n")
	}
	fmt.Fprintf(&c.out, "exit %d\n", code)
	if out.Len() > 0 {
		c.out.WriteString(c.normalize(out.String()))
	}
	if errb.Len() > 0 {
		c.out.WriteString("stderr:\n" + c.normalize(errb.String()))
	}
	c.out.WriteString("\n")
	return code, out.String(), errb.String()
}

// want runs a command and fails the test unless it exits with code.
func (c *coord) want(code int, args ...string) string {
	c.t.Helper()
	got, stdout, stderr := c.smbctl("", args...)
	if got != code {
		c.t.Errorf("smbctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", shellJoin(args), got, code, stdout, stderr)
	}
	return stdout
}

// put writes a record as a node would publish it.
func (c *coord) put(key string, m proto.Message) {
	c.t.Helper()
	b, _ := proto.Marshal(m)
	if _, err := etcd.Put(c.t.Context(), key, string(b)); err != nil {
		c.t.Fatal(err)
	}
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \"'\\$") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

var (
	joinTokenRE = regexp.MustCompile(statev1.JoinTokenPrefix + `[A-Za-z0-9_-]{43}`)
	revisionRE  = regexp.MustCompile(`("revision": |Revision:\s+)\d+`)
	volumeRE    = regexp.MustCompile(`("volume_id": "|Volume:\s+)[0-9a-f]{16}`)
)

// normalize hides what differs between runs: join tokens (kept at their
// length, so columns stay aligned), etcd revisions, share volume ids, the
// temporary directory.
func (c *coord) normalize(s string) string {
	s = strings.ReplaceAll(s, c.tmp, "$TMP")
	s = joinTokenRE.ReplaceAllString(s, statev1.JoinTokenPrefix+strings.Repeat("X", 43))
	s = volumeRE.ReplaceAllString(s, "${1}VOLUMEID00000000")
	return revisionRE.ReplaceAllString(s, "${1}REV")
}
