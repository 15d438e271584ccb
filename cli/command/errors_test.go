package command

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
)

// TestErrors records, in testdata/admin/errors.golden, what smbctl says
// when it cannot reach, authenticate to or configure its coordinator.
func TestErrors(t *testing.T) {
	c := newCoord(t)
	delete(c.vars, "SMBCTL_TOKEN")
	c.want(ExitAuth, "share", "ls")
	c.want(ExitAuth, "--token", "wrong", "share", "ls")
	c.want(ExitAuth, "share", "ls", "--token", "wrong")
	c.want(ExitUsage, "share", "ls", "--token-file", "no-such-token-file")
	tokenFile := filepath.Join(c.tmp, "token")
	os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600)
	c.want(ExitOK, "--token-file", tokenFile, "share", "ls")
	c.vars["SMBCTL_TOKEN_FILE"] = tokenFile
	c.want(ExitOK, "user", "ls")
	delete(c.vars, "SMBCTL_TOKEN_FILE")

	// Unreachable: a real dial to a port that refuses.
	c.dialer = nil
	c.want(ExitUnavailable, "--endpoint", "127.0.0.1:1", "share", "ls")
	c.vars["SMBCTL_ENDPOINT"] = "127.0.0.1:1"
	c.want(ExitUnavailable, "node", "ls", "--token", testToken)
	delete(c.vars, "SMBCTL_ENDPOINT")
	c.dialer = c.dial

	// TLS against the plaintext coordinator; --insecure off loopback.
	delete(c.vars, "SMBCTL_INSECURE")
	c.want(ExitUnavailable, "status", "--token", testToken)
	c.want(ExitUsage, "share", "ls", "--insecure", "--endpoint", "192.0.2.1:7445")
	c.want(ExitUsage, "share", "ls", "--ca", "no-such-ca.pem")
	c.want(ExitUsage, "share", "ls", "--cert", "client.pem")

	// The config file: $SMBCTL_CONFIG, then ~/.config/smbctl/config.json.
	conf := filepath.Join(c.tmp, "smbctl.json")
	writeJSON(t, conf, map[string]any{"endpoint": "localhost:7445", "token": testToken, "insecure": true, "request_timeout": "5s"})
	c.vars["SMBCTL_CONFIG"] = conf
	c.want(ExitOK, "share", "ls")
	c.want(ExitAuth, "share", "ls", "--token", "flag-beats-config")
	writeJSON(t, conf, map[string]any{"endpont": "typo:7445"})
	c.want(ExitUsage, "share", "ls")
	c.vars["SMBCTL_CONFIG"] = filepath.Join(c.tmp, "missing.json")
	c.want(ExitUsage, "share", "ls")
	delete(c.vars, "SMBCTL_CONFIG")
	os.MkdirAll(filepath.Join(c.vars["HOME"], ".config", "smbctl"), 0o755)
	writeJSON(t, filepath.Join(c.vars["HOME"], ".config", "smbctl", "config.json"),
		map[string]any{"token_file": tokenFile, "insecure": true})
	c.want(ExitOK, "share", "ls")
	os.Remove(filepath.Join(c.vars["HOME"], ".config", "smbctl", "config.json"))
	c.vars["SMBCTL_INSECURE"] = "1"

	// A development coordinator's token, linked for the user who started
	// it, is found without flags for its loopback endpoint only.
	dev := filepath.Join(c.vars["HOME"], ".config", "smbctl", "dev")
	os.MkdirAll(dev, 0o700)
	os.Symlink(tokenFile, filepath.Join(dev, "127.0.0.1:7445.token"))
	c.want(ExitOK, "share", "ls")
	c.want(ExitOK, "share", "ls", "--endpoint", "localhost:7445")
	c.want(ExitAuth, "share", "ls", "--endpoint", "127.0.0.1:7446")
	os.RemoveAll(dev)

	// Input the coordinator refuses, and flags after "--".
	c.vars["SMBCTL_TOKEN"] = testToken
	c.want(ExitUsage, "share", "add", "--", "-odd", "/srv/odd")
	c.want(ExitUsage, "share", "add", "IPC$", "/srv/ipc")
	c.want(ExitAuth, "share", "add", "etc", "/etc")
	golden(t, "admin/errors.golden", c.out.String())
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeCluster answers GetStatus with a fixed status (the real one's etcd
// endpoint, revision and size change from run to run).
type fakeCluster struct {
	adminv1.UnimplementedClusterServiceServer
	healthy bool
}

func (f *fakeCluster) GetStatus(context.Context, *adminv1.GetStatusRequest) (*adminv1.GetStatusResponse, error) {
	m := &adminv1.EtcdMember{Endpoint: "http://10.0.0.5:2379", Healthy: f.healthy, Version: "3.7.3", Leader: true, DbSizeBytes: 20 << 20}
	m2 := &adminv1.EtcdMember{Endpoint: "http://10.0.0.6:2379", Healthy: f.healthy, Version: "3.7.3", DbSizeBytes: 20<<20 + 4096}
	if !f.healthy {
		m2.Error = "context deadline exceeded"
	}
	return &adminv1.GetStatusResponse{
		Nodes: []*adminv1.Node{
			{Name: "n1", Addresses: []string{"10.0.1.1:445"}, Serving: []string{"10.0.1.1:445", "10.0.1.2:445"}, State: adminv1.NodeState_NODE_STATE_UP, Epoch: 4, Version: "v1.0.0", SessionCount: 12},
			{Name: "n2", Addresses: []string{"10.0.1.2:445"}, State: adminv1.NodeState_NODE_STATE_DOWN, Epoch: 2, Draining: true},
		},
		NodesUp: 1, ShareCount: 3, UserCount: 40, SessionCount: 12, OpenCount: 345,
		Etcd:               &adminv1.EtcdStatus{Healthy: f.healthy, Revision: 1234, Members: []*adminv1.EtcdMember{m, m2}},
		CoordinatorVersion: "v1.0.0",
	}, nil
}

// TestStatus records status output from a fixed status, checks the exit
// code for an unhealthy etcd, and runs status against the real coordinator.
func TestStatus(t *testing.T) {
	for _, healthy := range []bool{true, false} {
		c := newCoord(t)
		c.l = bufconn.Listen(1 << 20)
		g := grpc.NewServer()
		adminv1.RegisterClusterServiceServer(g, &fakeCluster{healthy: healthy})
		c.serve(g)
		code := ExitOK
		name := "admin/status.golden"
		if !healthy {
			code, name = ExitUnavailable, "admin/status-unhealthy.golden"
		}
		c.want(code, "status")
		c.want(code, "status", "-o", "json")
		if healthy {
			c.want(ExitError, "share", "ls") // a coordinator without ShareService
			c.want(ExitOK, "status", "--help")
		}
		golden(t, name, c.out.String())
	}

	c := newCoord(t)
	c.want(ExitOK, "share", "add", "data", "/srv/data")
	var st statusView
	out := c.want(ExitOK, "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.Etcd.Healthy || st.Shares != 1 ||
		st.CoordinatorVersion != "v0.0.0-test" || len(st.Etcd.Members) != 1 {
		t.Errorf("status = %+v, %v\n%s", st, err, out)
	}
	c.want(ExitOK, "status")
}
