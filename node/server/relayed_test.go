package server_test

import (
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// adopt has srv adopt a connection standing for one another node serves
// (relayed: its credit window stays there) and returns it.
func adopt(t *testing.T, srv *servertest.Server, relayed bool) *server.Adopted {
	t.Helper()
	nc, peer := net.Pipe()
	t.Cleanup(func() { peer.Close() })
	st := &server.HandoffState{Dialect: smb2.Dialect311, CreditsAtRelay: relayed, ClientAddr: "client", Node: "arrival"}
	if !relayed { // a fresh window of the server's size
		st.CreditsLow, st.CreditsHigh = 0, 1
		st.CreditsUsed = make([]uint64, (int(srv.Config().MaxCredits)+63)/64)
	}
	a, err := srv.Adopt(st, nc)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAdoptedGrant: the credits a relaying node grants are taken for a
// connection adopted with CreditsAtRelay only, at most a compound's
// worth for one message, and not without bound while unanswered.
func TestAdoptedGrant(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	grants := func(from uint64, n int) []server.Grant {
		g := make([]server.Grant, n)
		for i := range g {
			g[i] = server.Grant{MessageID: from + uint64(i), Credits: 1}
		}
		return g
	}
	if err := adopt(t, srv, false).Grant(grants(1, 1)); err == nil {
		t.Error("grants taken by a connection that keeps its own credit window")
	}
	a := adopt(t, srv, true)
	if err := a.Grant(grants(1, 64)); err != nil {
		t.Errorf("a compound's 64 grants: %v", err)
	}
	if err := a.Grant(grants(100, 65)); err == nil {
		t.Error("65 grants for one message taken")
	}
	var err error
	for from := uint64(1000); err == nil && from < 1<<20; from += 64 {
		err = a.Grant(grants(from, 64))
	}
	if err == nil {
		t.Error("grants never answered taken without bound")
	}
}
