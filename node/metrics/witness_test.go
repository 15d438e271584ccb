package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWitness(t *testing.T) {
	n := NewNode()
	w := n.Witness(func() int { return 3 }, func() int { return 2 })
	w.Notified(1)
	w.Notified(1)
	w.Notified(2)
	w.Notified(9) // unknown: ignored
	want := `
# HELP smbcluster_witness_notifications_total Witness notifications this node answered AsyncNotify with, by type.
# TYPE smbcluster_witness_notifications_total counter
smbcluster_witness_notifications_total{type="client_move"} 1
smbcluster_witness_notifications_total{type="ip_change"} 0
smbcluster_witness_notifications_total{type="resource_change"} 2
smbcluster_witness_notifications_total{type="share_move"} 0
# HELP smbcluster_witness_registrations Witness registrations of the cluster, as this node knows them.
# TYPE smbcluster_witness_registrations gauge
smbcluster_witness_registrations 3
# HELP smbcluster_witness_waiting Witness clients waiting for a notification (AsyncNotify) on this node.
# TYPE smbcluster_witness_waiting gauge
smbcluster_witness_waiting 2
`
	if err := testutil.GatherAndCompare(n.reg, strings.NewReader(want), "smbcluster_witness_notifications_total", "smbcluster_witness_registrations", "smbcluster_witness_waiting"); err != nil {
		t.Error(err)
	}
	var nilNode *Node
	nilNode.Witness(nil, nil).Notified(1) // a node without metrics
}
