package etcdstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/witness"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// DefaultIdle is how long a registration no client waits on is kept.
const DefaultIdle = 60 * time.Second

// callTimeout bounds each etcd call.
const callTimeout = 5 * time.Second

// Store is a witness.Store over etcd, and the feed of a node's Hub.
type Store struct {
	// Immutable.
	cli   *clientv3.Client
	node  string
	hub   *witness.Hub
	lease func() (clientv3.LeaseID, bool)
	idle  time.Duration
	log   *slog.Logger

	mu       sync.Mutex
	waiting  map[string]int       // registrations waited on here, by id
	waits    map[string]int       // wait keys seen, by registration id
	idleFrom map[string]time.Time // when a registration was last seen without a wait
	revs     map[string]int64     // registrations' mod revisions

	// syncing, when set (tests), runs when a sync has read etcd
	// (syncRead) and when it has dropped the registrations etcd did not
	// hold (syncDropped), before it watches (follow).
	syncing func(stage int)
}

// Config configures a Store.
type Config struct {
	Client *clientv3.Client
	Node   string
	Hub    *witness.Hub
	// Lease is the node's current lease, for its wait records.
	Lease func() (clientv3.LeaseID, bool)
	// Idle is how long a registration nobody waits on lives (DefaultIdle).
	Idle   time.Duration
	Logger *slog.Logger
}

// New returns a Store; Run feeds the hub.
func New(cfg Config) *Store {
	if cfg.Idle == 0 {
		cfg.Idle = DefaultIdle
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{cli: cfg.Client, node: cfg.Node, hub: cfg.Hub, lease: cfg.Lease, idle: cfg.Idle, log: log,
		waiting: map[string]int{}, waits: map[string]int{}, idleFrom: map[string]time.Time{}, revs: map[string]int64{}}
	cfg.Hub.Delivered = s.delivered
	return s
}

func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// Register writes a new registration's record.
func (s *Store) Register(ctx context.Context, reg *witness.Registration) error {
	b, err := proto.Marshal(recordOf(reg))
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(ctx)
	defer cancel()
	key := statev1.WitnessRegistrationKey(reg.ID)
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, string(b))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errors.New("witness: registration id in use")
	}
	// The hub hears of it through the watch too; until then, at once. Its
	// revision keeps a sync that read etcd before the put from taking it
	// out again (follow).
	s.mu.Lock()
	s.revs[reg.ID] = resp.Header.Revision
	s.mu.Unlock()
	s.hub.Put(reg)
	return nil
}

// Unregister deletes a registration, its waits and its moves.
func (s *Store) Unregister(ctx context.Context, id string) error {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	_, err := s.cli.Txn(ctx).Then(
		clientv3.OpDelete(statev1.WitnessRegistrationKey(id)),
		clientv3.OpDelete(statev1.WitnessMovesOf(id), clientv3.WithPrefix()),
	).Commit()
	return err
}

// Waiting records, on the node's lease, that a client waits here.
func (s *Store) Waiting(id string, on bool) {
	s.mu.Lock()
	if on {
		s.waiting[id]++
		if s.waiting[id] > 1 {
			s.mu.Unlock()
			return
		}
	} else {
		s.waiting[id]--
		if s.waiting[id] > 0 {
			s.mu.Unlock()
			return
		}
		delete(s.waiting, id)
	}
	s.mu.Unlock()
	ctx, cancel := callCtx(context.Background())
	defer cancel()
	key := statev1.WitnessWaitKey(id, s.node)
	if !on {
		s.cli.Delete(ctx, key)
		return
	}
	lease, ok := s.lease()
	if !ok {
		return
	}
	b, _ := proto.Marshal(&statev1.WitnessWaitRecord{Node: s.node, Since: timestamppb.Now()})
	if _, err := s.cli.Put(ctx, key, string(b), clientv3.WithLease(lease)); err != nil {
		s.log.Debug("witness wait record", "id", id, "err", err)
	}
}

// delivered deletes a move once a client was told.
func (s *Store) delivered(_ *witness.Registration, _ *witness.Notification, key string) {
	if key == "" {
		return
	}
	ctx, cancel := callCtx(context.Background())
	defer cancel()
	s.cli.Delete(ctx, key)
}

func recordOf(r *witness.Registration) *statev1.WitnessRegistrationRecord {
	return &statev1.WitnessRegistrationRecord{
		Id: r.ID, Version: r.Version, NetName: r.NetName, ShareName: r.ShareName, IpAddress: r.IP.String(),
		ClientName: r.Client, Flags: r.Flags, TimeoutSeconds: r.Timeout, Node: r.Node, Since: timestamppb.New(r.Since),
		ClientAddress: r.ClientAddr,
	}
}

func registrationOf(rec *statev1.WitnessRegistrationRecord) *witness.Registration {
	return &witness.Registration{
		ID: rec.GetId(), Version: rec.GetVersion(), NetName: rec.GetNetName(), ShareName: rec.GetShareName(),
		IP: net.ParseIP(rec.GetIpAddress()), Client: rec.GetClientName(), Flags: rec.GetFlags(),
		Timeout: rec.GetTimeoutSeconds(), Node: rec.GetNode(), Since: rec.GetSince().AsTime(),
		ClientAddr: rec.GetClientAddress(),
	}
}

// Notification turns a move record into what AsyncNotify answers.
func Notification(rec *statev1.WitnessMoveRecord) *witness.Notification {
	n := &witness.Notification{Type: witness.NotifyClientMove}
	if rec.GetKind() == statev1.WitnessMoveRecord_KIND_SHARE_MOVE {
		n.Type = witness.NotifyShareMove
	}
	for _, a := range rec.GetAddresses() {
		if ip := net.ParseIP(a); ip != nil {
			n.Addrs = append(n.Addrs, witness.IPAddr{IP: ip, Flags: witness.AddrOnline})
		}
	}
	return n
}

// MoveID returns a random move number.
func MoveID() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// hostOf returns the IP of a host:port (or bare IP) address.
func hostOf(addr string) net.IP {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		addr = h
	}
	return net.ParseIP(strings.Trim(addr, "[]"))
}
