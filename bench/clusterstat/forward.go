package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// forwardCmd is a TCP forwarder for clients that take one server
// address (smbtorture): every connection accepted on -listen goes to the
// next of -to's addresses in turn, so that a client's connections spread
// over the nodes as a round-robin DNS name would spread them; with one
// address it is the control (every connection to one node through the
// same forwarder, at the same cost). It prints "listening" once it
// accepts, and runs until SIGTERM or SIGINT.
func forwardCmd(args []string) error {
	fs := flag.NewFlagSet("forward", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to accept on")
	to := fs.String("to", "", "comma-separated addresses, in turn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	backends := strings.Split(*to, ",")
	if *to == "" || len(backends) == 0 {
		return errors.New("forward: -to names no address")
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", l.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; l.Close() }()
	return forward(l, backends)
}

// forward hands each connection l accepts to the next of backends, until
// l is closed.
func forward(l net.Listener, backends []string) error {
	var next atomic.Uint64
	var wg sync.WaitGroup
	for {
		c, err := l.Accept()
		if err != nil {
			wg.Wait()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		to := backends[(next.Add(1)-1)%uint64(len(backends))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			splice(c, to)
		}()
	}
}

// splice copies between client c and a new connection to addr until
// either side ends.
func splice(c net.Conn, addr string) {
	defer c.Close()
	s, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forward: %v\n", err)
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	<-done
}
