// Package metrics holds a node's instruments: the Prometheus collectors
// its /metrics endpoint serves and the bounded tables of its busiest
// clients and hottest files that its /stats endpoint serves to the
// coordinator (smbctl top).
//
// Its one invariant: recording an event on a hot path (a request
// answered, bytes moved) is a call on a pre-resolved child — no label
// lookup, no map, no allocation (BenchmarkRequest pins it). Labels are
// bounded: commands, NTSTATUS names (at most maxStatuses per command,
// the rest counted as "other"), shares, data paths; never a file or a
// client — those live only in the bounded top-N tables (TopN).
//
// A nil *Node records nothing, so the engine calls it unconditionally
// when metrics are off.
package metrics
