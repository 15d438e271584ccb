package robustness

import "strings"

// The violations the suite has found and the cluster does not fix yet,
// each with the faults it needs (docs/ROBUSTNESS.md, "What the suite
// found"). make test's short runs log a violation that matches one as
// known instead of failing, as integration/torture's knownfail lists do;
// make robustness (SMBCLUSTER_ROBUST_STRICT=on) fails on them too. A
// violation with no such fault in force (only cut-peers or a lossy link,
// or none) is never known.

// fencing are the faults after which a node may fence or die, and its
// shards move to another node and back: besides the node's own death,
// stop or cut from etcd, the etcd faults (a node whose keep-alives went
// to the member killed or cut off lost its lease in the 30-minute run).
var fencing = []string{"kill", "pause", "cut-etcd", "cut-both", "etcd-leader-kill", "etcd-partition"}

// knownIssues are the open issues, each a test of a violation.
var knownIssues = []struct {
	name  string
	match func(v Violation) bool
}{
	{"a byte-range lock outlives its open after a node fences or dies and shards move (docs/ROBUSTNESS.md, issue 2)",
		func(v Violation) bool { return strings.Contains(v.What, "a byte-range lock outlived its open") }},
	{"two conflicting share modes admitted while the file's owner node fences and another takes its shard (docs/ROBUSTNESS.md, issue 4)",
		func(v Violation) bool { return strings.HasPrefix(v.What, "conflicting share modes") }},
	{"a read did not wait for a write cached under a lease while the writer's node was cut off from its peers and another node fenced (docs/ROBUSTNESS.md, issue 9)",
		func(v Violation) bool {
			if !strings.HasPrefix(v.What, "register ") {
				return false
			}
			for _, o := range v.Ops {
				if o.Cached {
					return true
				}
			}
			return false
		}},
}

// KnownIssue returns the open issue v is an instance of, "" if none.
func KnownIssue(v Violation) string {
	inForce := false
	for _, f := range v.Faults {
		for _, k := range fencing {
			inForce = inForce || f.Kind == k
		}
	}
	if !inForce {
		return ""
	}
	for _, k := range knownIssues {
		if k.match(v) {
			return k.name
		}
	}
	return ""
}
