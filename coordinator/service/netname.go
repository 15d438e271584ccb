package service

import (
	"context"
	"errors"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// GetNetName reports the cluster's network name's record; none means
// online, never changed.
func (s *clusterService) GetNetName(ctx context.Context, _ *adminv1.GetNetNameRequest) (*adminv1.GetNetNameResponse, error) {
	rec := &statev1.NetNameRecord{}
	if _, err := s.b.st.Get(ctx, statev1.NetNameKey(), rec); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, storeError(err, "network name")
	}
	return &adminv1.GetNetNameResponse{NetName: netNameOf(rec)}, nil
}

// SetNetName writes the network name's record, as smbctl; every node
// follows it (node/cluster, node/witness/etcdstore).
func (s *clusterService) SetNetName(ctx context.Context, req *adminv1.SetNetNameRequest) (*adminv1.SetNetNameResponse, error) {
	key := statev1.NetNameKey()
	rec := &statev1.NetNameRecord{Offline: req.GetOffline(), ChangedBy: "smbctl", ChangeTime: timestamppb.New(s.b.now())}
	if _, err := s.b.st.Create(ctx, key, rec); errors.Is(err, store.ErrExists) {
		cur := &statev1.NetNameRecord{}
		_, err = s.b.st.Modify(ctx, key, cur, func() error { proto.Reset(cur); proto.Merge(cur, rec); return nil })
		if err != nil {
			return nil, storeError(err, "network name")
		}
	} else if err != nil {
		return nil, storeError(err, "network name")
	}
	s.b.log.Info("network name", "offline", rec.Offline)
	return &adminv1.SetNetNameResponse{NetName: netNameOf(rec)}, nil
}

func netNameOf(rec *statev1.NetNameRecord) *adminv1.NetName {
	return &adminv1.NetName{Offline: rec.GetOffline(), ChangedBy: rec.GetChangedBy(), Node: rec.GetNode(), ChangeTime: rec.GetChangeTime()}
}
