package nodemain

import (
	"syscall"
	"time"
)

// defaultHandshakeTimeout bounds how long a connection may stay
// unauthenticated: NEGOTIATE and two or three SESSION_SETUP round trips
// take milliseconds, a Kerberos ticket fetch a few seconds; an idle socket
// that never logs on is gone after this (the server's frames before logon
// are bounded too, node/server/limits.go).
const defaultHandshakeTimeout = 30 * time.Second

// defaultMaxConnections bounds the node's connections: each costs a
// 64 KiB read buffer and a goroutine while idle, so 4096 hold about
// 300 MiB at most, far more clients than a node of a scale-out cluster
// serves.
const defaultMaxConnections = 4096

// defaultMaxOpensPerSession is about Samba's "max open files" default
// (16404, per client process): more than any application needs, small
// enough that one client cannot take every descriptor of the node.
const defaultMaxOpensPerSession = 16384

// defaultMaxOpens is half the descriptor limit (RLIMIT_NOFILE, which the Go
// runtime raises to its hard limit at start): every open of a file holds
// a descriptor, and the other half stays for connections, directories
// and etcd, so that opens failing with STATUS_TOO_MANY_OPENED_FILES never
// leave the node unable to accept a connection.
func defaultMaxOpens() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 1 << 20
	}
	return max(int(lim.Cur/2), 1)
}

// limitDuration is a limit setting: 0 means the default d, negative none.
func limitDuration(v Duration, d time.Duration) time.Duration {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	}
	return time.Duration(v)
}

// limitCount is a limit setting: 0 means the default d, negative none.
func limitCount(v, d int) int {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	}
	return v
}
