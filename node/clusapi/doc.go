// Package clusapi serves the Failover Cluster Management API ([MS-CMRP]
// ClusAPI protocol version 3.0, over TCP) over a model of the cluster that
// a Cluster reads from the cluster's records: the cluster and its name,
// its nodes (up, down, paused: drained), one group ("Cluster Group")
// holding the cluster's network name resource (named as the cluster's
// NetBIOS name, the name witness clients register for) and an IP address
// resource for each address a node was admitted with.
//
// Reading the model is open to every authenticated caller; changing it —
// taking the network name offline or back online — is open only to the
// administrators Env.IsAdmin names, and the interface requires packet
// privacy, as [MS-CMRP] 2.1 requires of version 3.0.
//
// Context handles are per association: each connection gets its own
// Interface and handle table, dropped with the connection.
//
// Invariant: every [in] stub is decoded with bounds checks (package ndr);
// a malformed one is answered with a fault, an unknown opnum with
// nca_s_op_rng_error, an unknown handle with nca_s_fault_context_mismatch;
// never a panic.
package clusapi
