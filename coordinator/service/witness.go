package service

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// moveTTL is how long a move waits for its client to ask for it.
const moveTTL = 60 * time.Second

// witnessService implements adminv1.WitnessService over the witness
// records the nodes keep (state/v1 keys_witness.go).
type witnessService struct {
	adminv1.UnsafeWitnessServiceServer
	b *backend
}

// witnessView is what the service reads: the registrations, where their
// clients wait, and the nodes.
type witnessView struct {
	regs    []*statev1.WitnessRegistrationRecord
	waits   map[string][]string // registration id → nodes
	nodes   []store.Item[*statev1.NodeRecord]
	live    map[string]*statev1.NodeLiveRecord
	ipNodes map[string]string // IP → node whose address it is
}

func (b *backend) witnessView(ctx context.Context) (*witnessView, error) {
	v := &witnessView{waits: map[string][]string{}, live: map[string]*statev1.NodeLiveRecord{}, ipNodes: map[string]string{}}
	regs, err := store.List(ctx, b.st, statev1.WitnessRegistrationsPrefix, func() *statev1.WitnessRegistrationRecord { return &statev1.WitnessRegistrationRecord{} })
	if err != nil {
		return nil, storeError(err, "witness registrations")
	}
	for _, r := range regs {
		v.regs = append(v.regs, r.Record)
	}
	keys, err := b.st.Keys(ctx, statev1.WitnessWaitsPrefix)
	if err != nil {
		return nil, storeError(err, "witness waits")
	}
	for _, k := range keys {
		id, node, ok := strings.Cut(strings.TrimPrefix(k, statev1.WitnessWaitsPrefix), "/")
		if ok {
			v.waits[id] = append(v.waits[id], node)
		}
	}
	if v.nodes, err = store.List(ctx, b.st, statev1.NodesPrefix, func() *statev1.NodeRecord { return &statev1.NodeRecord{} }); err != nil {
		return nil, storeError(err, "nodes")
	}
	live, err := store.List(ctx, b.st, statev1.LivePrefix, func() *statev1.NodeLiveRecord { return &statev1.NodeLiveRecord{} })
	if err != nil {
		return nil, storeError(err, "nodes")
	}
	for _, l := range live {
		v.live[strings.ToLower(l.Record.GetName())] = l.Record
	}
	for _, n := range v.nodes {
		for _, a := range n.Record.GetAddresses() {
			v.ipNodes[hostIP(a)] = strings.ToLower(n.Record.GetName())
		}
	}
	return v, nil
}

// hostIP is the IP of a host:port address, as a registration names it.
func hostIP(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		addr = h
	}
	if ip := net.ParseIP(addr); ip != nil {
		return ip.String()
	}
	return addr
}

func (v *witnessView) describe(r *statev1.WitnessRegistrationRecord) *adminv1.WitnessRegistration {
	version := uint32(1)
	if r.GetVersion() == 0x00020000 {
		version = 2
	}
	waits := slices.Clone(v.waits[r.GetId()])
	slices.Sort(waits)
	return &adminv1.WitnessRegistration{
		Id: r.GetId(), ClientName: r.GetClientName(), NetName: r.GetNetName(), ShareName: r.GetShareName(),
		IpAddress: r.GetIpAddress(), AddressNode: v.ipNodes[hostIP(r.GetIpAddress())], Node: r.GetNode(),
		WaitingOn: waits, Version: version, CreateTime: r.GetSince(), ClientAddress: r.GetClientAddress(),
	}
}

// target returns a node's IP addresses, refusing a node that is unknown,
// down or draining.
func (v *witnessView) target(name string) ([]string, error) {
	name = strings.ToLower(name)
	for _, n := range v.nodes {
		if strings.ToLower(n.Record.GetName()) != name {
			continue
		}
		l, up := v.live[name]
		if !up {
			return nil, errorf(codes.FailedPrecondition, "node %q is down", name)
		}
		if n.Record.GetDraining() || l.GetDraining() {
			return nil, errorf(codes.FailedPrecondition, "node %q is draining", name)
		}
		var ips []string
		for _, a := range n.Record.GetAddresses() {
			ips = append(ips, hostIP(a))
		}
		return ips, nil
	}
	return nil, errorf(codes.NotFound, "node %q not found", name)
}

func (s *witnessService) ListWitnessRegistrations(ctx context.Context, _ *adminv1.ListWitnessRegistrationsRequest) (*adminv1.ListWitnessRegistrationsResponse, error) {
	v, err := s.b.witnessView(ctx)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.ListWitnessRegistrationsResponse{}
	for _, r := range v.regs {
		resp.Registrations = append(resp.Registrations, v.describe(r))
	}
	slices.SortFunc(resp.Registrations, func(a, b *adminv1.WitnessRegistration) int {
		if c := strings.Compare(strings.ToLower(a.ClientName), strings.ToLower(b.ClientName)); c != 0 {
			return c
		}
		return strings.Compare(a.Id, b.Id)
	})
	return resp, nil
}

func (s *witnessService) MoveClient(ctx context.Context, req *adminv1.MoveClientRequest) (*adminv1.MoveClientResponse, error) {
	if req.GetClient() == "" {
		return nil, invalidf("client: a client computer name is required")
	}
	moved, err := s.b.move(ctx, req.GetToNode(), statev1.WitnessMoveRecord_KIND_CLIENT_MOVE, func(r *statev1.WitnessRegistrationRecord) bool {
		return strings.EqualFold(r.GetClientName(), req.GetClient())
	})
	if err != nil {
		return nil, err
	}
	if len(moved) == 0 {
		return nil, errorf(codes.NotFound, "client %q has no witness registration", req.GetClient())
	}
	s.b.log.Info("witness client move", "client", req.GetClient(), "to", req.GetToNode(), "registrations", len(moved))
	return &adminv1.MoveClientResponse{Registrations: moved}, nil
}

func (s *witnessService) MoveShare(ctx context.Context, req *adminv1.MoveShareRequest) (*adminv1.MoveShareResponse, error) {
	if req.GetShare() == "" {
		return nil, invalidf("share: a share name is required")
	}
	moved, err := s.b.move(ctx, req.GetToNode(), statev1.WitnessMoveRecord_KIND_SHARE_MOVE, func(r *statev1.WitnessRegistrationRecord) bool {
		return r.GetShareName() != "" && strings.EqualFold(r.GetShareName(), req.GetShare())
	})
	if err != nil {
		return nil, err
	}
	if len(moved) == 0 {
		return nil, errorf(codes.NotFound, "share %q has no witness registration", req.GetShare())
	}
	s.b.log.Info("witness share move", "share", req.GetShare(), "to", req.GetToNode(), "registrations", len(moved))
	return &adminv1.MoveShareResponse{Registrations: moved}, nil
}

func (s *witnessService) MoveSession(ctx context.Context, req *adminv1.MoveSessionRequest) (*adminv1.MoveSessionResponse, error) {
	if req.GetSessionId() == 0 {
		return nil, invalidf("session id: a non-zero SessionId is required")
	}
	what := fmt.Sprintf("session 0x%x", req.GetSessionId())
	sess := &statev1.SessionRecord{}
	if _, err := s.b.st.Get(ctx, statev1.SessionKey(req.GetSessionId()), sess); err != nil {
		return nil, storeError(err, what)
	}
	ip := hostIP(sess.GetClientAddress())
	moved, err := s.b.move(ctx, req.GetToNode(), statev1.WitnessMoveRecord_KIND_CLIENT_MOVE, func(r *statev1.WitnessRegistrationRecord) bool {
		return r.GetClientAddress() != "" && hostIP(r.GetClientAddress()) == ip
	})
	if err != nil {
		return nil, err
	}
	if len(moved) == 0 {
		return nil, errorf(codes.NotFound, "%s: no witness registration from its client's address %s", what, ip)
	}
	s.b.log.Info("witness session move", "session", what, "to", req.GetToNode(), "registrations", len(moved))
	return &adminv1.MoveSessionResponse{Registrations: moved}, nil
}

// move writes a move for every registration match selects, to node to.
func (b *backend) move(ctx context.Context, to string, kind statev1.WitnessMoveRecord_Kind, match func(*statev1.WitnessRegistrationRecord) bool) ([]*adminv1.WitnessRegistration, error) {
	if err := checkNodeName(to); err != nil {
		return nil, invalidf("--to: %v", err)
	}
	v, err := b.witnessView(ctx)
	if err != nil {
		return nil, err
	}
	addrs, err := v.target(to)
	if err != nil {
		return nil, err
	}
	var moved []*adminv1.WitnessRegistration
	for _, r := range v.regs {
		if !match(r) {
			continue
		}
		if err := b.putMove(ctx, r.GetId(), kind, to, addrs); err != nil {
			return moved, err
		}
		moved = append(moved, v.describe(r))
	}
	return moved, nil
}

func (b *backend) putMove(ctx context.Context, id string, kind statev1.WitnessMoveRecord_Kind, to string, addrs []string) error {
	var n [8]byte
	rand.Read(n[:])
	rec := &statev1.WitnessMoveRecord{Kind: kind, TargetNode: strings.ToLower(to), Addresses: addrs, Time: timestamppb.New(b.now())}
	if err := b.st.PutWithTTL(ctx, statev1.WitnessMoveKey(id, binary.LittleEndian.Uint64(n[:])), rec, moveTTL); err != nil {
		return storeError(err, "witness move")
	}
	return nil
}

// drainMoves sends CLIENT_MOVE to the clients registered for a draining
// node's addresses, each to the live, undrained node with the fewest
// clients registered for its addresses (ties by name). Nothing is sent
// when no node can take them.
func (b *backend) drainMoves(ctx context.Context, node string) (int, error) {
	v, err := b.witnessView(ctx)
	if err != nil {
		return 0, err
	}
	node = strings.ToLower(node)
	load := map[string]int{}
	var targets []string
	for _, n := range v.nodes {
		name := strings.ToLower(n.Record.GetName())
		if l, up := v.live[name]; name != node && up && !n.Record.GetDraining() && !l.GetDraining() {
			targets = append(targets, name)
		}
	}
	if len(targets) == 0 {
		return 0, nil
	}
	for _, r := range v.regs {
		load[v.ipNodes[hostIP(r.GetIpAddress())]]++
	}
	moved := 0
	for _, r := range v.regs {
		if v.ipNodes[hostIP(r.GetIpAddress())] != node {
			continue
		}
		to := targets[0]
		for _, t := range targets[1:] {
			if load[t] < load[to] || (load[t] == load[to] && t < to) {
				to = t
			}
		}
		addrs, err := v.target(to)
		if err != nil {
			continue
		}
		if err := b.putMove(ctx, r.GetId(), statev1.WitnessMoveRecord_KIND_CLIENT_MOVE, to, addrs); err != nil {
			return moved, err
		}
		load[to]++
		moved++
	}
	return moved, nil
}
