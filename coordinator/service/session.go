package service

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const (
	// closeRequestTTL is how long a close request stays in etcd.
	closeRequestTTL = time.Minute
	// maxCloseTimeout bounds how long CloseSession/CloseOpen may wait.
	maxCloseTimeout = 5 * time.Minute
)

// sessionService implements adminv1.SessionService over the session,
// channel and open records nodes publish.
type sessionService struct {
	// Unsafe, not Unimplemented: a missing method fails to compile.
	adminv1.UnsafeSessionServiceServer
	b *backend
}

func (s *sessionService) ListSessions(ctx context.Context, req *adminv1.ListSessionsRequest) (*adminv1.ListSessionsResponse, error) {
	if req.GetNode() != "" {
		if err := checkNodeName(req.Node); err != nil {
			return nil, invalid(err)
		}
	}
	sessions, err := store.List(ctx, s.b.st, statev1.SessionsPrefix, func() *statev1.SessionRecord { return &statev1.SessionRecord{} })
	if err != nil {
		return nil, storeError(err, "sessions")
	}
	channels, err := store.List(ctx, s.b.st, statev1.ChannelsPrefix, func() *statev1.ChannelRecord { return &statev1.ChannelRecord{} })
	if err != nil {
		return nil, storeError(err, "channels")
	}
	byID := map[uint64][]*statev1.ChannelRecord{}
	for _, it := range channels {
		byID[it.Record.SessionId] = append(byID[it.Record.SessionId], it.Record)
	}
	resp := &adminv1.ListSessionsResponse{}
	for _, it := range sessions {
		sess := sessionOf(it.Record, byID[it.Record.SessionId])
		if req.User != "" && !strings.EqualFold(req.User, sess.User) {
			continue
		}
		if req.Node != "" && !hasChannelOn(sess, req.Node) {
			continue
		}
		resp.Sessions = append(resp.Sessions, sess)
	}
	return resp, nil
}

func hasChannelOn(s *adminv1.Session, node string) bool {
	for _, c := range s.Channels {
		if strings.EqualFold(c.Node, node) {
			return true
		}
	}
	return strings.EqualFold(s.Node, node)
}

func (s *sessionService) CloseSession(ctx context.Context, req *adminv1.CloseSessionRequest) (*adminv1.CloseSessionResponse, error) {
	timeout, err := closeTimeout(req.GetTimeout())
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("session 0x%016x", req.GetSessionId())
	key := statev1.SessionKey(req.SessionId)
	if ok, err := s.b.st.Exists(ctx, key); err != nil || !ok {
		return nil, storeError(orNotFound(err), what)
	}
	closed, err := s.b.requestClose(ctx, statev1.CloseSessionKey(req.SessionId), key, timeout)
	if err != nil {
		return nil, storeError(err, what)
	}
	s.b.log.Info("session close requested", "session", what, "closed", closed)
	return &adminv1.CloseSessionResponse{Closed: closed}, nil
}

func (s *sessionService) ListOpens(ctx context.Context, req *adminv1.ListOpensRequest) (*adminv1.ListOpensResponse, error) {
	prefix := statev1.OpensPrefix
	if req.GetNode() != "" {
		if err := checkNodeName(req.Node); err != nil {
			return nil, invalid(err)
		}
		prefix = statev1.NodeOpensPrefix(req.Node)
	}
	opens, err := store.List(ctx, s.b.st, prefix, func() *statev1.OpenRecord { return &statev1.OpenRecord{} })
	if err != nil {
		return nil, storeError(err, "opens")
	}
	resp := &adminv1.ListOpensResponse{}
	for _, it := range opens {
		o := it.Record
		if req.SessionId != 0 && o.SessionId != req.SessionId ||
			req.Share != "" && !strings.EqualFold(req.Share, o.Share) {
			continue
		}
		resp.Opens = append(resp.Opens, openOf(o))
	}
	return resp, nil
}

func (s *sessionService) CloseOpen(ctx context.Context, req *adminv1.CloseOpenRequest) (*adminv1.CloseOpenResponse, error) {
	if err := checkNodeName(req.GetNode()); err != nil {
		return nil, invalid(err)
	}
	timeout, err := closeTimeout(req.GetTimeout())
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("open 0x%016x on node %q", req.PersistentFileId, req.Node)
	key := statev1.OpenKey(req.Node, req.PersistentFileId)
	if ok, err := s.b.st.Exists(ctx, key); err != nil || !ok {
		return nil, storeError(orNotFound(err), what)
	}
	closed, err := s.b.requestClose(ctx, statev1.CloseOpenKey(req.Node, req.PersistentFileId), key, timeout)
	if err != nil {
		return nil, storeError(err, what)
	}
	s.b.log.Info("open close requested", "open", what, "closed", closed)
	return &adminv1.CloseOpenResponse{Closed: closed}, nil
}

func orNotFound(err error) error {
	if err == nil {
		return store.ErrNotFound
	}
	return err
}

func closeTimeout(d *durationpb.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, invalidf("timeout: %v", err)
	}
	t := d.AsDuration()
	if t < 0 || t > maxCloseTimeout {
		return 0, invalidf("timeout %v: use 0 (do not wait) up to %v", t, maxCloseTimeout)
	}
	return t, nil
}

// requestClose writes a close request at reqKey and, if timeout > 0, waits
// for target to go.
func (b *backend) requestClose(ctx context.Context, reqKey, target string, timeout time.Duration) (bool, error) {
	req := &statev1.CloseRequest{RequestTime: timestamppb.New(b.now()), Reason: "closed by an administrator"}
	if err := b.st.PutWithTTL(ctx, reqKey, req, closeRequestTTL); err != nil {
		return false, err
	}
	if timeout == 0 {
		return false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return b.st.WaitEmpty(wctx, target, true)
}

// sessionOf converts a session record and its channels to the API form.
func sessionOf(r *statev1.SessionRecord, channels []*statev1.ChannelRecord) *adminv1.Session {
	s := &adminv1.Session{
		SessionId:        r.SessionId,
		User:             r.User,
		Domain:           r.Domain,
		ClientAddress:    r.ClientAddress,
		ClientGuid:       guidString(r.ClientGuid),
		Dialect:          dialectName(r.Dialect),
		Signing:          r.SigningRequired,
		SigningAlgorithm: signingName(r.Dialect, r.SigningAlgorithmId),
		Encryption:       r.EncryptData,
		Cipher:           cipherName(r.CipherId),
		Node:             r.Node,
		CreateTime:       proto.CloneOf(r.CreateTime),
	}
	for _, c := range channels {
		for _, a := range c.ClientAddresses {
			s.Channels = append(s.Channels, &adminv1.Channel{Node: c.Node, ClientAddress: a})
		}
	}
	return s
}

// cipherName names a cipher id ([MS-SMB2] 2.2.3.1.2).
func cipherName(id uint32) string {
	switch id {
	case 0:
		return ""
	case 1:
		return "AES-128-CCM"
	case 2:
		return "AES-128-GCM"
	case 3:
		return "AES-256-CCM"
	case 4:
		return "AES-256-GCM"
	}
	return fmt.Sprintf("0x%04x", id)
}

// signingName names the signing algorithm: HMAC-SHA256 before 3.0,
// AES-CMAC for 3.0 and 3.0.2, negotiated for 3.1.1 ([MS-SMB2] 3.1.4.1,
// 2.2.3.1.7).
func signingName(dialect, id uint32) string {
	switch {
	case dialect != 0 && dialect < 0x0300:
		return "HMAC-SHA256"
	case dialect != 0 && dialect < 0x0311:
		return "AES-CMAC"
	}
	switch id {
	case 0:
		return "HMAC-SHA256"
	case 1:
		return "AES-CMAC"
	case 2:
		return "AES-GMAC"
	}
	return fmt.Sprintf("0x%04x", id)
}

// guidString formats a 16-byte GUID in registry form ([MS-DTYP] 2.3.4.3).
func guidString(g []byte) string {
	if len(g) != 16 {
		return ""
	}
	return fmt.Sprintf("{%08x-%04x-%04x-%x-%x}",
		binary.LittleEndian.Uint32(g[0:4]), binary.LittleEndian.Uint16(g[4:6]),
		binary.LittleEndian.Uint16(g[6:8]), g[8:10], g[10:16])
}

// openOf converts an open record to the API form.
func openOf(o *statev1.OpenRecord) *adminv1.Open {
	return &adminv1.Open{
		Node:             o.Node,
		PersistentFileId: o.PersistentFileId,
		SessionId:        o.SessionId,
		User:             o.User,
		Share:            o.Share,
		Path:             o.Path,
		DesiredAccess:    o.DesiredAccess,
		ShareAccess:      o.ShareAccess,
		Oplock:           oplockName(o.OplockLevel, o.LeaseState),
		Durable:          o.Durable || o.Persistent,
		OpenTime:         proto.CloneOf(o.OpenTime),
		OwnerNode:        o.OwnerNode,
		Locks:            locksOf(o.Locks),
	}
}

// locksOf converts an open record's byte-range locks to the API form.
func locksOf(ls []*statev1.ByteRangeLock) []*adminv1.ByteRangeLock {
	out := make([]*adminv1.ByteRangeLock, 0, len(ls))
	for _, l := range ls {
		out = append(out, &adminv1.ByteRangeLock{Offset: l.Offset, Length: l.Length, Exclusive: l.Exclusive})
	}
	return out
}

// oplockName names an oplock level ([MS-SMB2] 2.2.13) or a lease's
// caching state ([MS-SMB2] 2.2.13.2.8: R 0x1, H 0x2, W 0x4).
func oplockName(level, lease uint32) string {
	switch level {
	case 0x00:
		return "none"
	case 0x01:
		return "level2"
	case 0x08:
		return "exclusive"
	case 0x09:
		return "batch"
	case 0xFF:
		s := "lease:"
		for _, f := range []struct {
			bit uint32
			c   string
		}{{1, "R"}, {4, "W"}, {2, "H"}} {
			if lease&f.bit != 0 {
				s += f.c
			}
		}
		return s
	}
	return fmt.Sprintf("0x%02x", level)
}
