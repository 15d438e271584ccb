package peer

import (
	"crypto/tls"
	"net"
	"testing"
)

// handshake runs a TLS handshake between a server and a client config
// over loopback and returns the client's error.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		done <- tls.Server(c, server).Handshake()
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), client)
	if err == nil {
		// TLS 1.3: the server checks the client's certificate after the
		// client's side of the handshake is done; a read sees its verdict.
		c.Write([]byte{0})
		c.Read(make([]byte, 1))
		c.Close()
	}
	serr := <-done
	if err == nil {
		err = serr
	}
	return err
}

func TestPeerTLS(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	s1, _, err := TLSConfigs(secret, "node1")
	if err != nil {
		t.Fatal(err)
	}
	_, c2, err := TLSConfigs(secret, "node2")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, s1, c2); err != nil {
		t.Fatalf("two nodes of one cluster: %v", err)
	}
	_, other, err := TLSConfigs([]byte("another cluster's secret, 32 b.."), "intruder")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, s1, other); err == nil {
		t.Fatal("a node with another cluster's secret was accepted")
	}
	noCert := c2.Clone()
	noCert.Certificates = nil
	if err := handshake(t, s1, noCert); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
}
