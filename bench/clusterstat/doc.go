// Command clusterstat is make bench-cluster's helper (bench/cluster.sh):
//
//	clusterstat freeport [-nodes N]          a TCP port free on 127.0.0.1 through .N (3)
//	clusterstat rev -etcd URL                etcd's current revision
//	clusterstat writes -etcd URL -from REV   the keys written since REV, as JSON
//	clusterstat counter -name NAME URL...    sum of an expvar counter over /debug/vars URLs
//	clusterstat report -cells FILE -meta FILE -out PREFIX
//	clusterstat scaling -runs N:CELLS:META,... -out PREFIX
//	                                         spread against one node, by cluster size
//	clusterstat forward -listen ADDR -to A,B,...
//	                                         a TCP forwarder: each connection to the next address
//
// writes counts every put and delete etcd applied after revision REV (a
// transaction of several is one revision, so revisions undercount them),
// by the key's first component under /smbcluster/v1/ (opens, sessions,
// channels, live …): it watches from REV+1 up to the revision current when
// it starts.
//
// Invariant: it only reports numbers; the targets are printed beside them,
// never enforced.
package main
