package framework

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A delayed link, as tc netem's delay makes one, without sch_netem
// (which not every kernel the bed runs on has): iptables queues every
// packet the host sends and receives (but loopback's) to an NFQUEUE in
// the host's network namespace, and this process, bound to that queue,
// lets each go after its delay. The queue is --queue-bypass and fails
// open: if this process stops reading, or the queue fills, packets pass
// undelayed rather than being dropped.

// delayQueueNum is the queue's number in a host's namespace.
const delayQueueNum = 23

// delayRules are the iptables rules (after -I or -D) that queue h's
// packets.
var delayRules = [][]string{
	{"OUTPUT", "!", "-o", "lo", "-j", "NFQUEUE", "--queue-num", fmt.Sprint(delayQueueNum), "--queue-bypass"},
	{"INPUT", "!", "-i", "lo", "-j", "NFQUEUE", "--queue-num", fmt.Sprint(delayQueueNum), "--queue-bypass"},
}

// Delay holds every packet h sends or receives for base ± jitter
// (uniformly) before it goes on, in order, until Heal (or the test's
// end): a slow link both ways, so a round trip through h takes 2×base
// more. A second Delay of a delayed host fails the test.
func (h *Host) Delay(t testing.TB, base, jitter time.Duration) {
	t.Helper()
	h.delayMu.Lock()
	defer h.delayMu.Unlock()
	if h.delay != nil {
		t.Fatalf("%s is delayed already", h.Name)
	}
	q, err := openDelayQueue(h.NetNS, delayQueueNum, base, jitter)
	if err != nil {
		t.Fatalf("delay on %s: %v", h.Name, err)
	}
	h.delay = q
	t.Cleanup(func() { h.undelay(t) })
	for _, r := range delayRules {
		if res := h.Exec(t, "iptables", append([]string{"-I"}, r...)...); res.ExitCode != 0 {
			h.undelayLocked(t)
			t.Fatalf("delay on %s:\n%s", h.Name, res)
		}
	}
}

// undelay ends h's Delay, if any: the rules go first, then every packet
// still held is let go at once.
func (h *Host) undelay(t testing.TB) {
	h.delayMu.Lock()
	defer h.delayMu.Unlock()
	h.undelayLocked(t)
}

func (h *Host) undelayLocked(t testing.TB) {
	if h.delay == nil {
		return
	}
	for _, r := range delayRules {
		for h.Exec(t, "iptables", append([]string{"-D"}, r...)...).ExitCode == 0 {
		}
	}
	h.delay.close()
	h.delay = nil
}

// delayQueue is a netlink socket bound to an NFQUEUE: the reader takes
// each queued packet's id and its release time; the releaser gives the
// verdict (accept) when the time comes.
type delayQueue struct {
	fd           int
	num          uint16
	base, jitter time.Duration

	held     chan heldPacket
	stopping atomic.Bool // the reader stops; the releaser lets the rest go at once
	wg       sync.WaitGroup
	last     time.Time // the reader's: the latest release time, so packets keep their order
}

type heldPacket struct {
	id uint32
	at time.Time
}

// Netlink numbers of nfnetlink_queue (linux/netfilter/nfnetlink_queue.h).
const (
	nfnlSubsysQueue    = 3
	nfqnlMsgPacket     = 0
	nfqnlMsgVerdict    = 1
	nfqnlMsgConfig     = 2
	nfqaPacketHdr      = 1
	nfqaVerdictHdr     = 2
	nfqaCfgCmd         = 1
	nfqaCfgParams      = 2
	nfqaCfgQueueMaxlen = 3
	nfqaCfgMask        = 4
	nfqaCfgFlags       = 5
	nfqnlCfgCmdBind    = 1
	nfqnlCopyMeta      = 1
	nfqaCfgFFailOpen   = 1
	nfqaCfgFGSO        = 4
	nfAccept           = 1
)

func openDelayQueue(netns string, num uint16, base, jitter time.Duration) (*delayQueue, error) {
	var fd int
	err := inNetNS(netns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		return err
	})
	if err != nil {
		return nil, err
	}
	q := &delayQueue{fd: fd, num: num, base: base, jitter: jitter, held: make(chan heldPacket, 1<<16)}
	if err := q.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	q.wg.Add(2)
	go q.read()
	go q.release()
	return q, nil
}

// inNetNS runs f on a thread in the network namespace netns (ip netns's
// name): a socket f makes stays in that namespace. The thread is given
// back to the runtime only if it returned to this process's namespace.
func inNetNS(netns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/run/netns", netns))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", netns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and ends with this goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setup binds the socket to the queue: packet ids only (no payload),
// GSO packets whole, and fail-open when the queue is full.
func (q *delayQueue) setup() error {
	if err := unix.Bind(q.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	unix.SetsockoptInt(q.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	unix.SetsockoptInt(q.fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	if err := unix.SetsockoptTimeval(q.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000}); err != nil {
		return err
	}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0}
	binary.BigEndian.PutUint16(cmd[2:], unix.AF_INET)
	if err := q.request(nfqnlMsgConfig, attr(nfqaCfgCmd, cmd)); err != nil {
		return fmt.Errorf("bind queue %d: %w", q.num, err)
	}
	params := []byte{0, 0, 0, 0, nfqnlCopyMeta}
	flags := be32(nfqaCfgFFailOpen | nfqaCfgFGSO)
	if err := q.request(nfqnlMsgConfig, attr(nfqaCfgParams, params), attr(nfqaCfgQueueMaxlen, be32(1<<15)),
		attr(nfqaCfgMask, flags), attr(nfqaCfgFlags, flags)); err != nil {
		return fmt.Errorf("configure queue %d: %w", q.num, err)
	}
	return nil
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// attr is a netlink attribute, padded to four bytes.
func attr(typ uint16, payload []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// message is a netlink message of the queue subsystem of type msg.
func (q *delayQueue) message(msg uint16, flags uint16, attrs ...[]byte) []byte {
	body := []byte{unix.AF_UNSPEC, 0, 0, 0} // nfgenmsg: family, version, the queue (big-endian)
	binary.BigEndian.PutUint16(body[2:], q.num)
	for _, a := range attrs {
		body = append(body, a...)
	}
	b := binary.NativeEndian.AppendUint32(nil, uint32(16+len(body)))
	b = binary.NativeEndian.AppendUint16(b, nfnlSubsysQueue<<8|msg)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, 0) // seq
	b = binary.NativeEndian.AppendUint32(b, 0) // pid
	return append(b, body...)
}

// request sends a message asking for an acknowledgment and reads it.
func (q *delayQueue) request(msg uint16, attrs ...[]byte) error {
	if err := unix.Sendto(q.fd, q.message(msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs...), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(q.fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
				return syscall.Errno(-e)
			}
			return nil
		}
	}
	return errors.New("no acknowledgment")
}

// read takes the queued packets' ids and hands each to the releaser with
// its release time, until the queue closes.
func (q *delayQueue) read() {
	defer q.wg.Done()
	defer close(q.held)
	buf := make([]byte, 1<<16)
	for !q.stopping.Load() {
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			continue // the receive timeout (a look at stopping), or ENOBUFS
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if m.Header.Type != nfnlSubsysQueue<<8|nfqnlMsgPacket || len(m.Data) < 4 {
				continue
			}
			id, ok := packetID(m.Data[4:])
			if !ok {
				continue
			}
			at := time.Now().Add(q.base)
			if q.jitter > 0 {
				at = at.Add(time.Duration(rand.Int64N(int64(2*q.jitter))) - q.jitter)
			}
			if at.Before(q.last) {
				at = q.last
			}
			q.last = at
			select {
			case q.held <- heldPacket{id, at}:
			default:
				q.verdict(id) // too many held: this one goes now
			}
		}
	}
}

// packetID finds NFQA_PACKET_HDR's packet id among attrs.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:]), true
		}
		attrs = attrs[min(len(attrs), (l+3)&^3):]
	}
	return 0, false
}

// release lets each held packet go at its time, or at once when the
// queue closes.
func (q *delayQueue) release() {
	defer q.wg.Done()
	for p := range q.held {
		if d := time.Until(p.at); d > 0 && !q.stopping.Load() {
			<-time.After(d) // the packet's delay: the fault itself
		}
		q.verdict(p.id)
	}
}

func (q *delayQueue) verdict(id uint32) {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v, nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	unix.Sendto(q.fd, q.message(nfqnlMsgVerdict, unix.NLM_F_REQUEST, attr(nfqaVerdictHdr, v)), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// close lets every held packet go and closes the socket (the kernel
// unbinds the queue; with the rules gone nothing is queued any more).
func (q *delayQueue) close() {
	q.stopping.Store(true)
	q.wg.Wait()
	unix.Close(q.fd)
}
