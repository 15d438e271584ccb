package witness

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestHubMovesAndWithdraw(t *testing.T) {
	h := NewHub()
	h.SetResources(threeNodes())
	h.Put(&Registration{ID: "a", IP: net.ParseIP("127.0.0.2")})
	move := &Notification{Type: NotifyClientMove, Addrs: []IPAddr{{IP: net.ParseIP("127.0.0.3"), Flags: AddrOnline}}}
	h.Queue("a", "m1", move)
	h.Queue("a", "m1", move) // the same move twice is queued once
	h.Queue("a", "m2", move)
	h.Withdraw("a", "m2") // delivered through another node
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := h.Wait(ctx, "a")
	if err != nil || n != move {
		t.Fatalf("Wait: %v %v", n, err)
	}
	short, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, err := h.Wait(short, "a"); err != context.Canceled {
		t.Fatalf("nothing queued: %v", err)
	}
	// A waiter ends when the registration goes.
	done := make(chan error)
	go func() { _, err := h.Wait(ctx, "a"); done <- err }()
	// Whether it waits already or not, it ends with ErrUnknown.
	h.Delete("a")
	if err := <-done; err != ErrUnknown {
		t.Fatalf("after Delete: %v", err)
	}
}

func TestHubResourceChanges(t *testing.T) {
	h := NewHub()
	h.SetResources(threeNodes())
	h.Put(&Registration{ID: "a", IP: net.ParseIP("127.0.0.2")})
	h.Put(&Registration{ID: "b", IP: net.ParseIP("127.0.0.3"), Flags: FlagIPNotification})
	rs := threeNodes()
	rs[1].Available = false
	h.SetResources(rs)
	h.SetResources(threeNodes()) // back
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, want := range []uint32{ResourceUnavailable, ResourceAvailable} {
		n, err := h.Wait(context.Background(), "a")
		if err != nil || n.Type != NotifyResourceChange || n.Resources[0].State != want || n.Resources[0].Name != "127.0.0.2" {
			t.Fatalf("want %#x: %+v %v", want, n, err)
		}
	}
	if _, err := h.Wait(ctx, "b"); err != context.Canceled {
		t.Errorf("b was told of node 2: %v", err)
	}
	// Public addresses: b asked for IP notifications, a did not. A move
	// shows as offline, then online.
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2")}
	h.SetServed(ips)     // known: nothing to say
	h.SetServed(ips[:1]) // 127.0.0.2's holder died
	h.SetServed(ips)     // another node took it
	for _, want := range []uint32{AddrOffline, AddrOnline} {
		n, err := h.Wait(context.Background(), "b")
		if err != nil || n.Type != NotifyIPChange || len(n.Addrs) != 1 || n.Addrs[0].Flags != want || !n.Addrs[0].IP.Equal(ips[1]) {
			t.Fatalf("want IP_CHANGE %#x: %+v %v", want, n, err)
		}
	}
	if _, err := h.Wait(ctx, "a"); err != context.Canceled {
		t.Errorf("a was told of an address: %v", err)
	}
}

// FuzzCall runs every opnum on arbitrary stub data: a fault or an answer,
// never a panic; AsyncNotify does not wait (its context has ended).
func FuzzCall(f *testing.F) {
	f.Add(uint16(1), []byte{1, 0, 1, 0, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 'S', 0, 'M', 0, 'B', 0, 0, 0})
	f.Add(uint16(3), make([]byte, 20))
	f.Add(uint16(4), []byte{0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, opnum uint16, in []byte) {
		hub := NewHub()
		hub.SetResources(threeNodes())
		env := &Env{Hub: hub, Store: LocalStore{Hub: hub}, Node: "n1",
			NetNames: func() []string { return []string{"SMB"} }, ShareExists: func(string) bool { return true }}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		env.call(ctx, opnum%6, in)
		decodeRegister(in, opnum&1 != 0, true) // NDR64
	})
}

// TestAsyncNotifyTimeout: a RegisterEx keep-alive timeout ends a waiting
// AsyncNotify with ERROR_TIMEOUT and no response; an unknown handle gets
// ERROR_NOT_FOUND, and UnRegister of one ERROR_INVALID_PARAMETER.
func TestAsyncNotifyTimeout(t *testing.T) {
	hub := NewHub()
	hub.SetResources(threeNodes())
	env := &Env{Hub: hub, Store: LocalStore{Hub: hub}, Node: "n1", NetNames: func() []string { return []string{"SMB"} }}
	a := registerArgs{version: V2, netName: "smb", ip: "127.0.0.2", client: "C", hasNetName: true, hasIP: true, hasClient: true, timeout: 1}
	h, st := env.register(context.Background(), &a, true)
	if st != errSuccess {
		t.Fatalf("RegisterEx: %d", st)
	}
	start := time.Now()
	if n, st := env.asyncNotify(context.Background(), h); n != nil || st != errTimeout {
		t.Fatalf("AsyncNotify: %v %d", n, st)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("timed out after %v, want 1 s", d)
	}
	// A keep-alive timeout of 0 answers at once, with what is pending or
	// ERROR_TIMEOUT.
	a.timeout = 0
	h0, st := env.register(context.Background(), &a, true)
	if st != errSuccess {
		t.Fatalf("RegisterEx: %d", st)
	}
	if n, st := env.asyncNotify(context.Background(), h0); n != nil || st != errTimeout {
		t.Fatalf("AsyncNotify, timeout 0: %v %d", n, st)
	}
	hub.SetNetNameOnline(true)
	hub.SetNetNameOnline(false)
	if n, st := env.asyncNotify(context.Background(), h0); st != errSuccess || n.Type != NotifyResourceChange {
		t.Fatalf("AsyncNotify, timeout 0, pending: %v %d", n, st)
	}
	var unknown Handle
	unknown[4] = 1
	if _, st := env.asyncNotify(context.Background(), unknown); st != errNotFound {
		t.Errorf("unknown handle: %d", st)
	}
	if st := env.unregister(context.Background(), unknown); st != errInvalidParameter {
		t.Errorf("UnRegister unknown: %d", st)
	}
	// The wire form of no notification: a NULL pointer and the status.
	if b := encodeNotify(nil, errTimeout, false); len(b) != 8 || b[4] != 0xb4 || b[5] != 0x05 {
		t.Errorf("encoded %x", b)
	}
}

// TestNetNameChange: the network name going offline queues RESOURCE_CHANGE
// unavailable, naming the net name each client registered for, for every
// registration; coming back, available; the first state known and a state
// set again queue nothing.
func TestNetNameChange(t *testing.T) {
	hub := NewHub()
	hub.Put(&Registration{ID: "a", NetName: "SMBCLUSTER", IP: net.ParseIP("127.0.0.2")})
	hub.Put(&Registration{ID: "b", NetName: "smbcluster.example.com", IP: net.ParseIP("127.0.0.3")})
	hub.SetNetNameOnline(true)
	hub.SetNetNameOnline(true)
	if !hub.NetNameOnline() {
		t.Fatal("offline after online")
	}
	hub.SetNetNameOnline(false)
	hub.SetNetNameOnline(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id, name := range map[string]string{"a": "SMBCLUSTER", "b": "smbcluster.example.com"} {
		for _, want := range []uint32{ResourceUnavailable, ResourceAvailable} {
			n, err := hub.Wait(ctx, id)
			if err != nil || n.Type != NotifyResourceChange || len(n.Resources) != 1 || n.Resources[0] != (ResourceChange{Name: name, State: want}) {
				t.Fatalf("%s: %+v %v, want %s %#x", id, n, err, name, want)
			}
		}
	}
}
