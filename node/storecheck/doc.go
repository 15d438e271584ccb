// Package storecheck checks that the storage under a clustered share is
// one filesystem as every node sees it, before and while the node serves
// the share.
//
// Every cross-node guarantee of the cluster — share modes, locks, leases,
// delete pending, durable handles, a READ through one node returning what
// a WRITE through another wrote — assumes that each node's own mount of
// the share (a client of GlusterFS, CephFS, GPFS, NFS …) shows the same
// files, with the same inode numbers, and shows another node's write,
// rename or delete at once. Client caches break that silently: a FUSE
// mount with attribute or entry caching, or a page cache that another
// node's writes do not invalidate, serve old bytes with no error.
//
// The check, for each share, between every pair of nodes serving it:
// each node (as prober) rewrites in place, renames and resizes its probe
// file in the share's hidden StorageProbeDir through its own mount, then
// publishes the round (statev1.StorageProbeRecord); every other node (as
// checker) reads it back at once through its own mount — the old name
// gone, the new one there with the prober's inode number and size, the
// bytes through a fresh descriptor and through the one it kept from the
// round before — and publishes what it saw (StorageVerdictRecord). Every
// other round keeps the file's size: a FUSE mount drops a file's cached
// pages when it sees the size change, so only a same-size rewrite shows a
// page cache other nodes' writes leave stale (ceph-fuse's defaults). Reads
// through the page cache alone (sendfile, RWF_NOWAIT) are checked too: a
// mount where only they are stale is served without them. A pair is
// coherent once each node saw RoundsToDecide (three) consecutive rounds
// of the other right, among them a same-size rewrite of bytes it had read
// and cached. A node serves the share while it
// is coherent with more than half of the nodes it has a decided pair with
// (itself counted), and refuses it otherwise (View), so a node with a
// wrong mount refuses alone while two nodes that disagree both refuse.
//
// Invariant: a node never reports a share serving while a decided pair
// check of the share failed for a majority of the nodes it knows; the
// decision is a pure function of the records (Decide).
package storecheck
