package store

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// embeddedStartTimeout bounds how long StartEmbedded waits for the member
// to become ready.
const embeddedStartTimeout = 60 * time.Second

// maxSocketPath is the longest unix socket path every platform binds
// (sun_path holds 104 bytes on the BSDs, 108 on Linux, with its NUL).
const maxSocketPath = 103

// Socket names in the embedded etcd's directory.
const (
	ClientSocket = "client.sock"
	peerSocket   = "peer.sock"
)

// StartEmbedded starts a single-member etcd with its data in dir and
// returns its client endpoint and a function that stops it and waits.
// For development (`make run`, smbcoord --embedded-etcd) and tests;
// production uses an external etcd cluster over TCP and TLS.
//
// It has no TCP port: it serves clients on the unix socket
// dir/client.sock (endpoint unix:///ABS/DIR/client.sock) and its peer
// on dir/peer.sock, and dir is made mode 0700 and must belong to this
// process's user, so that no other local user (root aside) can connect:
// etcd itself asks for no credentials. When dir's path is too long for a
// socket, the sockets go to a fresh mode-0700 directory under
// os.TempDir(), removed on stop.
func StartEmbedded(dir string) (endpoints []string, stop func(), err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := privateDir(dir); err != nil {
		return nil, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	sockets, cleanup, err := socketDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	endpoints, closeEtcd, err := startEmbedded(dir, sockets)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return endpoints, func() { closeEtcd(); cleanup() }, nil
}

// privateDir creates dir mode 0700, or makes the existing one so after
// checking that it is a directory of this process's user.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (symlinks are not followed)", dir)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to another user: the embedded etcd keeps its data and sockets only in a directory of the user who starts it", dir)
	}
	return os.Chmod(dir, 0o700)
}

// socketDir is dir, or a new private directory when dir's path is too
// long for a socket; cleanup removes the latter.
func socketDir(dir string) (sockets string, cleanup func(), err error) {
	if len(filepath.Join(dir, ClientSocket)) <= maxSocketPath {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "smbcluster-etcd-")
	if err != nil {
		return "", nil, err
	}
	if len(filepath.Join(tmp, ClientSocket)) > maxSocketPath {
		os.Remove(tmp)
		return "", nil, fmt.Errorf("no directory with a path short enough for a unix socket (%s, %s)", dir, tmp)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

func startEmbedded(dir, sockets string) ([]string, func(), error) {
	clientPath := filepath.Join(sockets, ClientSocket)
	if c, err := net.Dial("unix", clientPath); err == nil {
		c.Close()
		return nil, nil, fmt.Errorf("embedded etcd in %s: another etcd serves %s", dir, clientPath)
	}
	client := url.URL{Scheme: "unix", Path: clientPath}
	peerPath := filepath.Join(sockets, peerSocket)
	cfg := embed.NewConfig()
	cfg.Name = "smbcluster-dev"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	// etcd listens on a peer URL's host alone (not its path), so the
	// socket's path goes there; it advertises the usual unix:///PATH.
	cfg.ListenPeerUrls = []url.URL{{Scheme: "unix", Host: peerPath}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "unix", Path: peerPath}}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd logs "setting up serving ... failed" at error level whenever it
	// is closed; start-up failures come back as errors regardless.
	cfg.LogLevel = "fatal"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
	case <-time.After(embeddedStartTimeout):
		e.Server.Stop()
		e.Close()
		return nil, nil, fmt.Errorf("embedded etcd in %s: not ready after %v", dir, embeddedStartTimeout)
	}
	// The directory keeps other users out; the sockets' own modes too.
	for _, p := range []string{clientPath, peerPath} {
		if err := os.Chmod(p, 0o600); err != nil {
			e.Close()
			return nil, nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
		}
	}
	return []string{client.String()}, e.Close, nil
}
