package service

import (
	"context"
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// etcdProbeTimeout bounds each etcd member's status probe and Health.
const etcdProbeTimeout = 2 * time.Second

// clusterService implements adminv1.ClusterService.
type clusterService struct {
	// Unsafe, not Unimplemented: a missing method fails to compile.
	adminv1.UnsafeClusterServiceServer
	b *backend
}

func (s *clusterService) GetStatus(ctx context.Context, req *adminv1.GetStatusRequest) (*adminv1.GetStatusResponse, error) {
	nodes, err := s.b.nodes(ctx)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.GetStatusResponse{Nodes: nodes, CoordinatorVersion: s.b.version}
	for _, n := range nodes {
		if n.State == adminv1.NodeState_NODE_STATE_UP {
			resp.NodesUp++
		}
	}
	counts := []struct {
		prefix string
		to     *uint32
	}{
		{statev1.SharesPrefix, &resp.ShareCount},
		{statev1.UsersPrefix, &resp.UserCount},
		{statev1.SessionsPrefix, &resp.SessionCount},
		{statev1.OpensPrefix, &resp.OpenCount},
	}
	for _, c := range counts {
		n, err := s.b.st.Count(ctx, c.prefix)
		if err != nil {
			return nil, storeError(err, "cluster status")
		}
		*c.to = uint32(n)
	}
	resp.Etcd = s.etcdStatus(ctx)
	return resp, nil
}

// etcdStatus probes every endpoint the client knows.
func (s *clusterService) etcdStatus(ctx context.Context) *adminv1.EtcdStatus {
	c := s.b.st.Client()
	st := &adminv1.EtcdStatus{Healthy: true}
	for _, ep := range c.Endpoints() {
		m := &adminv1.EtcdMember{Endpoint: ep}
		pctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
		r, err := c.Status(pctx, ep)
		cancel()
		if err != nil {
			m.Error = err.Error()
			st.Healthy = false
		} else {
			m.Healthy = len(r.Errors) == 0
			m.Version = r.Version
			m.Leader = r.Leader == r.Header.MemberId
			m.DbSizeBytes = r.DbSize
			st.Revision = max(st.Revision, r.Header.Revision)
			if !m.Healthy {
				m.Error = r.Errors[0]
				st.Healthy = false
			}
		}
		st.Members = append(st.Members, m)
	}
	return st
}

func (s *clusterService) Health(ctx context.Context, req *adminv1.HealthRequest) (*adminv1.HealthResponse, error) {
	hctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
	defer cancel()
	if _, err := s.b.st.Exists(hctx, statev1.SettingsKey()); err != nil {
		return &adminv1.HealthResponse{Serving: false, Message: "etcd unreachable: " + err.Error()}, nil
	}
	return &adminv1.HealthResponse{Serving: true, Message: "ok"}, nil
}

func (s *clusterService) GetSettings(ctx context.Context, req *adminv1.GetSettingsRequest) (*adminv1.GetSettingsResponse, error) {
	rec := &statev1.Settings{}
	_, err := s.b.st.Get(ctx, statev1.SettingsKey(), rec)
	if errors.Is(err, store.ErrNotFound) {
		rec, err = &statev1.Settings{}, nil // never set: defaults
	}
	if err != nil {
		return nil, storeError(err, "settings")
	}
	return &adminv1.GetSettingsResponse{Settings: settingsOf(rec)}, nil
}

// settingsFields are the UpdateSettings mask paths and how each applies.
var settingsFields = map[string]func(r *statev1.Settings, s *adminv1.Settings) error{
	"require_signing": func(r *statev1.Settings, s *adminv1.Settings) error { r.RequireSigning = s.RequireSigning; return nil },
	"encrypt_data":    func(r *statev1.Settings, s *adminv1.Settings) error { r.EncryptData = s.EncryptData; return nil },
	"reject_unencrypted": func(r *statev1.Settings, s *adminv1.Settings) error {
		r.RejectUnencrypted = s.RejectUnencrypted
		return nil
	},
	"allow_guest": func(r *statev1.Settings, s *adminv1.Settings) error { r.AllowGuest = s.AllowGuest; return nil },
	"min_dialect": func(r *statev1.Settings, s *adminv1.Settings) (err error) {
		r.MinDialect, err = parseDialect(s.MinDialect)
		return err
	},
	"max_dialect": func(r *statev1.Settings, s *adminv1.Settings) (err error) {
		r.MaxDialect, err = parseDialect(s.MaxDialect)
		return err
	},
}

func (s *clusterService) UpdateSettings(ctx context.Context, req *adminv1.UpdateSettingsRequest) (*adminv1.UpdateSettingsResponse, error) {
	paths := req.GetUpdateMask().GetPaths()
	if req.GetSettings() == nil || len(paths) == 0 {
		return nil, invalidf("settings and update_mask are required: name the settings to change")
	}
	rec := &statev1.Settings{}
	for _, p := range paths { // validate everything before reading etcd
		f := settingsFields[p]
		if f == nil {
			return nil, invalidf("update_mask: unknown setting %q", p)
		}
		if err := f(rec, req.Settings); err != nil {
			return nil, invalid(err)
		}
	}
	key := statev1.SettingsKey()
	// Settings start absent (all defaults): create them empty first.
	if _, err := s.b.st.Create(ctx, key, &statev1.Settings{}); err != nil && !errors.Is(err, store.ErrExists) {
		return nil, storeError(err, "settings")
	}
	_, err := s.b.st.Modify(ctx, key, rec, func() error {
		for _, p := range paths {
			settingsFields[p](rec, req.Settings) // validated above
		}
		rec.UpdateTime = timestamppb.New(s.b.now())
		if rec.MinDialect != 0 && rec.MaxDialect != 0 && rec.MinDialect > rec.MaxDialect {
			return invalidf("min_dialect %s is above max_dialect %s", dialectName(rec.MinDialect), dialectName(rec.MaxDialect))
		}
		return nil
	})
	if err != nil {
		return nil, storeError(err, "settings")
	}
	s.b.log.Info("settings updated", "fields", paths)
	return &adminv1.UpdateSettingsResponse{Settings: settingsOf(rec)}, nil
}

func settingsOf(r *statev1.Settings) *adminv1.Settings {
	return &adminv1.Settings{
		RequireSigning:    r.RequireSigning,
		EncryptData:       r.EncryptData,
		RejectUnencrypted: r.RejectUnencrypted,
		AllowGuest:        r.AllowGuest,
		MinDialect:        dialectName(r.MinDialect),
		MaxDialect:        dialectName(r.MaxDialect),
	}
}
