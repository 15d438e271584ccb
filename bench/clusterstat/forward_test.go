package main

import (
	"bufio"
	"net"
	"slices"
	"testing"
)

// TestForwardRoundRobin: each connection goes to the next backend, and
// bytes go both ways.
func TestForwardRoundRobin(t *testing.T) {
	var backends []string
	for _, name := range []string{"a", "b"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		backends = append(backends, l.Addr().String())
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					line, _ := bufio.NewReader(c).ReadString('\n')
					c.Write([]byte(name + ":" + line))
				}()
			}
		}()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- forward(l, backends) }()
	var got []string
	for range 4 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("hi\n"))
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	if want := []string{"a:hi\n", "b:hi\n", "a:hi\n", "b:hi\n"}; !slices.Equal(got, want) {
		t.Fatalf("answers %q, want %q", got, want)
	}
	l.Close()
	if err := <-done; err != nil {
		t.Fatalf("forward after its listener closed: %v", err)
	}
}
