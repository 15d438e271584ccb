package service

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxDrainTimeout bounds how long DrainNode may wait.
const maxDrainTimeout = 24 * time.Hour

// nodeService implements adminv1.NodeService over NodeRecords and what
// nodes publish (NodeLiveRecords, epochs, channels).
type nodeService struct {
	// Unsafe, not Unimplemented: a missing method fails to compile.
	adminv1.UnsafeNodeServiceServer
	b *backend
}

func (s *nodeService) AddNode(ctx context.Context, req *adminv1.AddNodeRequest) (*adminv1.AddNodeResponse, error) {
	if err := checkNodeName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	addrs, err := normalizeAddresses(req.GetAddresses())
	if err != nil {
		return nil, invalid(err)
	}
	token := statev1.NewJoinToken()
	rec := &statev1.NodeRecord{
		Name:            req.Name,
		Addresses:       addrs,
		JoinTokenSha256: statev1.HashJoinToken(token),
		AdmitTime:       timestamppb.New(s.b.now()),
	}
	if _, err := s.b.st.Create(ctx, statev1.NodeKey(req.Name), rec); err != nil {
		return nil, storeError(err, quote("node", req.Name))
	}
	s.b.log.Info("node admitted", "node", req.Name, "addresses", addrs)
	node, err := s.b.node(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &adminv1.AddNodeResponse{Node: node, JoinToken: token}, nil
}

func (s *nodeService) RemoveNode(ctx context.Context, req *adminv1.RemoveNodeRequest) (*adminv1.RemoveNodeResponse, error) {
	if err := checkNodeName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	what := quote("node", req.Name)
	rec := &statev1.NodeRecord{}
	rev, err := s.b.st.Get(ctx, statev1.NodeKey(req.Name), rec)
	if err != nil {
		return nil, storeError(err, what)
	}
	up, err := s.b.st.Exists(ctx, statev1.NodeLiveKey(req.Name))
	if err != nil {
		return nil, storeError(err, what)
	}
	if up && !req.Force {
		return nil, errorf(codes.FailedPrecondition, "node %q is up: drain and stop it first, or remove it with force", req.Name)
	}
	if err := s.b.st.Delete(ctx, statev1.NodeKey(req.Name), rev); err != nil {
		return nil, storeError(err, what)
	}
	s.b.log.Info("node removed", "node", req.Name, "was_up", up)
	return &adminv1.RemoveNodeResponse{}, nil
}

func (s *nodeService) DrainNode(ctx context.Context, req *adminv1.DrainNodeRequest) (*adminv1.DrainNodeResponse, error) {
	if err := checkNodeName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	var timeout time.Duration
	if req.Timeout != nil {
		if err := req.Timeout.CheckValid(); err != nil {
			return nil, invalidf("timeout: %v", err)
		}
		timeout = req.Timeout.AsDuration()
		if timeout < 0 || timeout > maxDrainTimeout {
			return nil, invalidf("timeout %v: use 0 (do not wait) up to %v", timeout, maxDrainTimeout)
		}
	}
	rec, err := s.setDraining(ctx, req.Name, true, timeout)
	if err != nil {
		return nil, err
	}
	s.b.log.Info("node draining", "node", req.Name, "timeout", timeout)
	// Witness clients of the node are told to move first (witness.go).
	if moved, err := s.b.drainMoves(ctx, req.Name); err != nil {
		s.b.log.Warn("witness moves of a draining node", "node", req.Name, "err", err)
	} else if moved > 0 {
		s.b.log.Info("witness clients moved off a draining node", "node", req.Name, "registrations", moved)
	}
	drained := false
	if timeout > 0 {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		drained, err = s.b.st.WaitEmpty(wctx, statev1.NodeChannelsPrefix(req.Name), false)
		cancel()
		if err != nil {
			return nil, storeError(err, quote("node", req.Name))
		}
	}
	node, err := s.b.node(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &adminv1.DrainNodeResponse{Node: node, Drained: drained || node.SessionCount == 0}, nil
}

func (s *nodeService) ResumeNode(ctx context.Context, req *adminv1.ResumeNodeRequest) (*adminv1.ResumeNodeResponse, error) {
	if err := checkNodeName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	rec, err := s.setDraining(ctx, req.Name, false, 0)
	if err != nil {
		return nil, err
	}
	s.b.log.Info("node resumed", "node", req.Name)
	node, err := s.b.node(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &adminv1.ResumeNodeResponse{Node: node}, nil
}

// setDraining sets or clears node name's draining mark.
func (s *nodeService) setDraining(ctx context.Context, name string, on bool, timeout time.Duration) (*statev1.NodeRecord, error) {
	rec := &statev1.NodeRecord{}
	_, err := s.b.st.Modify(ctx, statev1.NodeKey(name), rec, func() error {
		rec.Draining = on
		rec.DrainDeadline = nil
		if on && timeout > 0 {
			rec.DrainDeadline = timestamppb.New(s.b.now().Add(timeout))
		}
		return nil
	})
	if err != nil {
		return nil, storeError(err, quote("node", name))
	}
	return rec, nil
}

func (s *nodeService) ListNodes(ctx context.Context, req *adminv1.ListNodesRequest) (*adminv1.ListNodesResponse, error) {
	nodes, err := s.b.nodes(ctx)
	if err != nil {
		return nil, err
	}
	return &adminv1.ListNodesResponse{Nodes: nodes}, nil
}

func (s *nodeService) GetNode(ctx context.Context, req *adminv1.GetNodeRequest) (*adminv1.GetNodeResponse, error) {
	if err := checkNodeName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	rec := &statev1.NodeRecord{}
	if _, err := s.b.st.Get(ctx, statev1.NodeKey(req.Name), rec); err != nil {
		return nil, storeError(err, quote("node", req.Name))
	}
	node, err := s.b.node(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &adminv1.GetNodeResponse{Node: node}, nil
}

// published is what the nodes publish about themselves, by node name.
type published struct {
	live     map[string]*statev1.NodeLiveRecord
	epochs   map[string]uint64
	sessions map[string]uint32 // channel records per node
}

// readPublished reads liveness, epochs and channel counts of all nodes.
func (b *backend) readPublished(ctx context.Context) (*published, error) {
	p := &published{
		live:     map[string]*statev1.NodeLiveRecord{},
		epochs:   map[string]uint64{},
		sessions: map[string]uint32{},
	}
	live, err := store.List(ctx, b.st, statev1.LivePrefix, func() *statev1.NodeLiveRecord { return &statev1.NodeLiveRecord{} })
	if err != nil {
		return nil, storeError(err, "node liveness")
	}
	for _, it := range live {
		p.live[statev1.LastKeyPart(it.Key)] = it.Record
	}
	epochs, err := b.st.Values(ctx, statev1.EpochsPrefix)
	if err != nil {
		return nil, storeError(err, "node epochs")
	}
	for k, v := range epochs {
		e, _ := strconv.ParseUint(string(v), 10, 64) // a garbled epoch reads as 0
		p.epochs[statev1.LastKeyPart(k)] = e
	}
	channels, err := b.st.Keys(ctx, statev1.ChannelsPrefix)
	if err != nil {
		return nil, storeError(err, "channels")
	}
	for _, k := range channels {
		node, _, _ := strings.Cut(strings.TrimPrefix(k, statev1.ChannelsPrefix), "/")
		p.sessions[node]++
	}
	return p, nil
}

// nodes lists every admitted node.
func (b *backend) nodes(ctx context.Context) ([]*adminv1.Node, error) {
	items, err := store.List(ctx, b.st, statev1.NodesPrefix, func() *statev1.NodeRecord { return &statev1.NodeRecord{} })
	if err != nil {
		return nil, storeError(err, "nodes")
	}
	p, err := b.readPublished(ctx)
	if err != nil {
		return nil, err
	}
	nodes := make([]*adminv1.Node, 0, len(items))
	for _, it := range items {
		nodes = append(nodes, p.node(it.Record))
	}
	return nodes, nil
}

// node describes one admitted node.
func (b *backend) node(ctx context.Context, rec *statev1.NodeRecord) (*adminv1.Node, error) {
	p, err := b.readPublished(ctx)
	if err != nil {
		return nil, err
	}
	return p.node(rec), nil
}

func (p *published) node(rec *statev1.NodeRecord) *adminv1.Node {
	key := strings.ToLower(rec.Name)
	n := &adminv1.Node{
		Name:          rec.Name,
		Addresses:     append([]string(nil), rec.Addresses...),
		State:         adminv1.NodeState_NODE_STATE_ADMITTED,
		Draining:      rec.Draining,
		DrainDeadline: proto.CloneOf(rec.DrainDeadline),
		Epoch:         p.epochs[key],
		SessionCount:  p.sessions[key],
		AdmitTime:     proto.CloneOf(rec.AdmitTime),
	}
	if live := p.live[key]; live != nil {
		n.State = adminv1.NodeState_NODE_STATE_UP
		n.Epoch = max(n.Epoch, live.Epoch)
		n.Version = live.Version
		n.StartTime = proto.CloneOf(live.StartTime)
		n.Serving = append([]string(nil), live.Addresses...)
	} else if n.Epoch > 0 {
		n.State = adminv1.NodeState_NODE_STATE_DOWN
	}
	return n
}
