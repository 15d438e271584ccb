package store

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// embeddedStartTimeout bounds how long StartEmbedded waits for the member
// to become ready.
const embeddedStartTimeout = 60 * time.Second

// StartEmbedded starts a single-member etcd with its data under dir and
// its client and peer URLs on free loopback ports. It returns the client
// endpoints and a stop function that shuts it down and waits for it.
// For development (`make run`) and tests; production uses an external
// etcd cluster.
func StartEmbedded(dir string) (endpoints []string, stop func(), err error) {
	for attempt := 0; attempt < 5; attempt++ {
		endpoints, stop, err = startEmbedded(dir)
		if err == nil || !isAddrInUse(err) {
			return endpoints, stop, err
		}
	}
	return nil, nil, err
}

func startEmbedded(dir string) ([]string, func(), error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, nil, err
	}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg := embed.NewConfig()
	cfg.Name = "smbcluster-dev"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
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
	return []string{client.String()}, e.Close, nil
}

// freePorts finds n distinct free TCP ports on 127.0.0.1. Another process
// may take one before etcd binds it; StartEmbedded then tries again.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) ||
		strings.Contains(err.Error(), "address already in use")
}
