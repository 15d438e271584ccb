package loadgen

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// TCPResult is the throughput of a loopback TCP self-test.
type TCPResult struct {
	Streams int
	Elapsed time.Duration
	Bytes   int64
}

// TCPLoopback measures the machine's TCP throughput over 127.0.0.1: streams
// connections each send 1 MiB writes for d to a receiver that discards them.
// It is the ceiling any SMB server on this loopback can approach.
func TCPLoopback(ctx context.Context, streams int, d time.Duration) (TCPResult, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return TCPResult{}, err
	}
	defer l.Close()
	var received atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { acceptAndDiscard(l, streams, &received) })
	conns := make([]net.Conn, 0, streams)
	for range streams {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			return TCPResult{}, err
		}
		conns = append(conns, c)
	}
	start := time.Now()
	deadline := start.Add(d)
	var senders sync.WaitGroup
	for _, c := range conns {
		c.SetWriteDeadline(deadline)
		senders.Go(func() {
			buf := make([]byte, 1<<20)
			for ctx.Err() == nil {
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		})
	}
	senders.Wait()
	elapsed := time.Since(start)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return TCPResult{}, err
	}
	return TCPResult{Streams: streams, Elapsed: elapsed, Bytes: received.Load()}, nil
}

func acceptAndDiscard(l net.Listener, streams int, received *atomic.Int64) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for range streams {
		c, err := l.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer c.Close()
			buf := make([]byte, 1<<20)
			for {
				n, err := c.Read(buf)
				received.Add(int64(n))
				if err != nil {
					return // EOF once the sender closes
				}
			}
		})
	}
}
