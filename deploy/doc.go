// Package deploy holds how smbcluster is deployed: systemd units
// (systemd/), example configuration (config/), a compose file (compose/)
// with its image (Dockerfile), Kubernetes manifests (kubernetes/), the
// local cluster `make run` starts (localcluster/), a Prometheus scrape
// configuration (prometheus/) and a Grafana dashboard (grafana/).
//
// Invariant: every file here parses, every smbnode, smbcoord and smbctl
// flag it uses exists (deploy_test.go checks both), and every metric the
// dashboard queries is exported (dashboard_test.go).
package deploy
