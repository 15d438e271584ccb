// Package framework starts SMB servers for end-to-end tests and drives the
// real clients (smbclient, smbtorture, impacket) against them.
//
// A test asks for a server with [Start] (the target chosen by the
// SMBCLUSTER_TARGET environment variable: "node", the default, or "samba"),
// [StartNode] (our smbnode binary, built once per test binary by
// [BuildNode]) or [StartSamba] (a private smbd on a loopback port with its
// own smb.conf and state directories). Every server started here is stopped
// in t.Cleanup. [NewCluster] starts etcd, the coordinator and several
// nodes; [StartRoundRobin] puts a forwarder in front of them that places
// each new TCP connection on the next node in turn, as round-robin DNS or
// an L4 load balancer would. [StartKDC] starts a throw-away MIT Kerberos
// realm (krb5kdc on a free loopback port, its database and configuration
// in a temporary directory reached through KRB5_CONFIG and
// KRB5_KDC_PROFILE, principals made with kadmin.local); its tests skip
// when the MIT KDC is not installed. [StartCephFS] starts a throw-away
// Ceph cluster with one CephFS filesystem (mon, mgr, OSD on a sparse file,
// MDS, all state in a temporary directory; 14–25 s on a busy 2-core
// machine, 0.3 GiB), which
// nodes mount with their own ceph-fuse ([CephFS.MountCommand]); &CephFS{}
// is also a backend of the multi-host test bed.
//
// [NewBed] deploys a cluster as on separate machines (issue 22): each node,
// each member of a three-member etcd and the storage servers in a [Host]
// of their own — a network namespace joined to a private bridge
// (10.231.ID.0/24; the bridge's address is the root namespace's, where the
// coordinator and the clients run) and a persistent mount namespace —
// each node with its own client's mount of the [Backend] (the local
// directory, or GlusterFS: one replica-3 volume, each node its own FUSE
// mount) at one share path, and public addresses moved by the real
// --address-hook (bed-address-hook: ip addr add/del and a gratuitous ARP
// on the host's veth). [Shared] lets the tests of a package bring one bed
// up for all of them. Beds left by a killed test process are removed by
// the next bed's start (by their owner's pid in /run/smbc-bed).
//
// Invariant: a server returned by a Start function accepts TCP connections
// on Node.Addr, its process belongs to the calling test, and it is gone when
// the test's cleanups have run; a server that does not stop on SIGTERM
// within the deadline, exits non-zero, or logged a panic fails the test.
// Nothing here waits with a fixed sleep: every wait is on a condition with an
// overall deadline.
package framework
