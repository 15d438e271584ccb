// Package deploy holds how smbcluster is deployed: systemd units
// (systemd/), example configuration (config/), a compose file (compose/)
// with its image (Dockerfile), Kubernetes manifests (kubernetes/), and the
// local cluster `make run` starts (localcluster/).
//
// Invariant: every file here parses, and every smbnode, smbcoord and smbctl
// flag it uses exists (deploy_test.go checks both).
package deploy
