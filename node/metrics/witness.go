package metrics

import "github.com/prometheus/client_golang/prometheus"

// Witness is the witness service's instruments ([MS-SWN]): notifications
// answered, by type; the registrations and waiting clients are asked at
// scrape time.
type Witness struct {
	sent [5]prometheus.Counter // by notification type 1..4; 0 unused
}

// witnessTypes name the notification types ([MS-SWN] 2.2.2.4) by number.
var witnessTypes = [5]string{"", "resource_change", "client_move", "share_move", "ip_change"}

// Witness registers the witness service's instruments: registrations
// (the cluster's, as this node mirrors them) and waiting (AsyncNotify
// calls held on this node) are called at scrape time.
func (n *Node) Witness(registrations, waiting func() int) *Witness {
	if n == nil {
		return nil
	}
	f := factory{n.reg}
	f.gaugeFunc("smbcluster_witness_registrations", "Witness registrations of the cluster, as this node knows them.", func() float64 { return float64(registrations()) })
	f.gaugeFunc("smbcluster_witness_waiting", "Witness clients waiting for a notification (AsyncNotify) on this node.", func() float64 { return float64(waiting()) })
	sent := f.counterVec("smbcluster_witness_notifications_total", "Witness notifications this node answered AsyncNotify with, by type.", "type")
	w := &Witness{}
	for i := 1; i < len(witnessTypes); i++ {
		w.sent[i] = sent.WithLabelValues(witnessTypes[i])
	}
	return w
}

// Notified counts a notification of type typ (1 RESOURCE_CHANGE … 4
// IP_CHANGE) answered.
func (w *Witness) Notified(typ uint32) {
	if w != nil && typ > 0 && int(typ) < len(w.sent) {
		w.sent[typ].Inc()
	}
}
