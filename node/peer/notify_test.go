package peer

import (
	"context"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// TestNotifierHoldsNoLock: while a node tells a peer of a watch, and
// while it sends a peer changes, its notifier's mu is not held (doc.go:
// no mutex is held across an RPC), so changes are still posted
// meanwhile; once the peer answers, the changes arrive in order.
func TestNotifierHoldsNoLock(t *testing.T) {
	calling, answer := make(chan string, 8), make(chan struct{})
	hold := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		switch req.(type) {
		case *peerv1.WatchRequest:
			calling <- "Watch"
			<-answer
		case *peerv1.NotifyRequest:
			calling <- "Notify"
			<-answer
		}
		return h(ctx, req)
	}
	a, b := twoNodesServing(t, grpc.UnaryInterceptor(hold))
	next := func(want string) {
		t.Helper()
		select {
		case got := <-calling:
			if got != want {
				t.Fatalf("b was called %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("b was not called %s", want)
		}
	}
	// Well within deliverTimeout, which ends a call b holds.
	free := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(deliverTimeout / 4); !a.notifier.mu.TryLock(); {
			if time.Now().After(deadline) {
				t.Fatalf("a holds its notifier's mu while it %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
		a.notifier.mu.Unlock()
	}
	got := sink{make(chan string, 8)}
	b.SetNotifySinks(func(string) (NotifySink, bool) { return got, true })

	a.Watch("data", state.Watch{Dir: "dir", Filter: 1})
	next("Watch")
	free("tells b of a watch")

	spec := &peerv1.WatchSpec{Id: 1, Share: "data", Dir: "dir", Filter: 1}
	if _, err := a.Service().Watch(context.Background(), &peerv1.WatchRequest{Node: "b", Epoch: 1, Add: []*peerv1.WatchSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	a.Post("data", 1, "dir/first.txt", 1, false)
	next("Notify")
	free("sends b a change")
	a.Post("data", 1, "dir/second.txt", 1, false) // queued behind the call

	close(answer)
	for _, want := range []string{"dir/first.txt", "dir/second.txt"} {
		select {
		case name := <-got.changes:
			if name != want {
				t.Fatalf("b got %q, want %q", name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("b did not get %q", want)
		}
	}
}
