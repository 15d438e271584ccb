package peer

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	"github.com/smbcluster/smbcluster/node/clock"
)

// The node-to-node API runs over mutual TLS with the cluster's own
// credentials: every node derives the same certificate authority from the
// cluster secret (the secret that already seals NT hashes and session
// keys, so whoever holds it is of the cluster anyway) and issues itself a
// certificate under it at start. A peer is accepted if its certificate
// chains to that authority; nothing else needs distributing.

// peerServerName is the name every node's certificate carries and every
// client checks.
const peerServerName = "smbcluster-peer"

// caKey derives the cluster's peer CA key from the secret.
func caKey(secret []byte) (ed25519.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, secret, nil, "smbcluster peer CA v1", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// caTemplate is the CA certificate every node makes alike.
func caTemplate() *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "smbcluster peer CA"},
		NotBefore:             time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2120, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
}

// TLSConfigs returns the server and client TLS configurations of node's
// peer API for the cluster with secret.
func TLSConfigs(secret []byte, node string) (server, client *tls.Config, err error) {
	ca, err := caKey(secret)
	if err != nil {
		return nil, nil, err
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate(), caTemplate(), ca.Public(), ca)
	if err != nil {
		return nil, nil, fmt.Errorf("peer CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, err
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	now := clock.Now()
	leaf := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: node},
		DNSNames:     []string{peerServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, pub, ca)
	if err != nil {
		return nil, nil, fmt.Errorf("peer certificate: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	server = &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		Time: clock.Now, // a node's certificate checks on its own clock
	}
	client = &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		RootCAs: pool, ServerName: peerServerName,
		Time: clock.Now,
	}
	return server, client, nil
}
