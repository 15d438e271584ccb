package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestRequestAllocs pins the hot path: a request answered, its share's
// time and its bytes cost no allocation once its status has been seen.
func TestRequestAllocs(t *testing.T) {
	n := NewNode()
	sh := n.Share("data")
	n.Request(smb2.CmdRead, smb2.StatusEndOfFile, time.Millisecond)
	allocs := testing.AllocsPerRun(1000, func() {
		n.Started()
		n.Request(smb2.CmdRead, smb2.StatusSuccess, 30*time.Microsecond)
		n.Request(smb2.CmdRead, smb2.StatusEndOfFile, 30*time.Microsecond)
		sh.Request(30 * time.Microsecond)
		sh.Read(PathZeroCopy, 4096)
		n.Credits(1)
		n.Finished()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
}

func TestRequestCounters(t *testing.T) {
	n := NewNode()
	for range 3 {
		n.Request(smb2.CmdWrite, smb2.StatusSuccess, time.Millisecond)
	}
	n.Request(smb2.CmdWrite, smb2.StatusDiskFull, time.Millisecond)
	if got := testutil.ToFloat64(n.requests.WithLabelValues("WRITE", "STATUS_SUCCESS")); got != 3 {
		t.Errorf("WRITE STATUS_SUCCESS = %v, want 3", got)
	}
	if got := testutil.ToFloat64(n.requests.WithLabelValues("WRITE", "STATUS_DISK_FULL")); got != 1 {
		t.Errorf("WRITE STATUS_DISK_FULL = %v, want 1", got)
	}
	// Past maxStatuses distinct statuses, the rest count as "other".
	for i := range maxStatuses + 5 {
		n.Request(smb2.CmdIoctl, smb2.Status(0xC0000100+uint32(i)), time.Millisecond)
	}
	if got := testutil.ToFloat64(n.requests.WithLabelValues("IOCTL", "other")); got != 5 {
		t.Errorf("IOCTL other = %v, want 5", got)
	}
	// STATUS_SUCCESS of every command, DISK_FULL, the IOCTL statuses, other.
	if got, want := testutil.CollectAndCount(n.requests), int(smb2.NumCommands)+1+maxStatuses+1; got != want {
		t.Errorf("%d series, want %d", got, want)
	}
}

// TestNilNode: a nil Node (metrics off) records nothing and does not panic.
func TestNilNode(t *testing.T) {
	var n *Node
	n.Request(smb2.CmdRead, smb2.StatusSuccess, time.Millisecond)
	n.Share("x").Read(PathBuffered, 1)
	n.Started()
	n.BreakEnded(true, time.Second, true)
	n.HandoffMoved(true, 1)
}

// TestHandoffBytes: bytes moved for handed-over channels count by
// direction.
func TestHandoffBytes(t *testing.T) {
	n := NewNode()
	n.HandoffMoved(false, 4096)
	n.HandoffMoved(false, 100)
	n.HandoffMoved(true, 1<<20)
	n.HandoffMoved(true, 0)
	if got := testutil.ToFloat64(n.handoffBytes[0]); got != 4196 {
		t.Errorf("read bytes %v, want 4196", got)
	}
	if got := testutil.ToFloat64(n.handoffBytes[1]); got != 1<<20 {
		t.Errorf("written bytes %v, want %d", got, 1<<20)
	}
}

func TestTopN(t *testing.T) {
	tab := NewTopN(3)
	add := func(key string, req uint64) {
		var c IOCount
		c.Requests.Store(req)
		tab.Fold(key, &c)
	}
	add("a", 100)
	add("b", 5)
	add("c", 50)
	add("a", 1)
	add("d", 7) // evicts b (5): d counts 5+7
	var twice IOCount
	twice.Requests.Store(1)
	tab.Fold("a", &twice)
	tab.Fold("a", &twice) // already moved: adds nothing
	got := topEntries(tab.merged(nil), 10)
	var s []string
	for _, e := range got {
		s = append(s, fmt.Sprintf("%s=%d", e.Key, e.Requests))
	}
	if want := "a=102 c=50 d=12"; strings.Join(s, " ") != want {
		t.Errorf("top = %s, want %s", strings.Join(s, " "), want)
	}
}

func TestSnapshot(t *testing.T) {
	n := NewNode()
	sh := n.Share("data")
	for range 4 {
		n.Request(smb2.CmdRead, smb2.StatusSuccess, 200*time.Microsecond)
		sh.Request(200 * time.Microsecond)
		sh.Read(PathBuffered, 4096)
	}
	sh.Written(PathSpliced, 1<<20)
	var c IOCount
	c.Requests.Store(4)
	n.FileClosed(`data\hot.bin`, &c)
	s, err := n.Snapshot(5)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Shares["data"]
	if s.Total.Requests != 4 || d == nil || d.Requests != 4 || d.BytesRead != 4*4096 || d.BytesWritten != 1<<20 {
		t.Fatalf("snapshot total %+v share %+v", s.Total, d)
	}
	if len(d.Bounds) != len(LatencyBuckets) || d.Counts[0] != 0 || d.Counts[len(d.Counts)-1] != 4 {
		t.Errorf("histogram %v %v", d.Bounds, d.Counts)
	}
	if len(s.Files) != 1 || s.Files[0].Key != `data\hot.bin` {
		t.Errorf("files %+v", s.Files)
	}
}

// BenchmarkRequest is what one READ costs the engine with metrics on:
// the command's counter and histogram, the share's histogram and bytes,
// the credits and the outstanding count.
func BenchmarkRequest(b *testing.B) {
	n := NewNode()
	sh := n.Share("data")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Started()
			n.Request(smb2.CmdRead, smb2.StatusSuccess, 30*time.Microsecond)
			sh.Request(30 * time.Microsecond)
			sh.Read(PathZeroCopy, 4096)
			n.Credits(1)
			n.Finished()
		}
	})
}
