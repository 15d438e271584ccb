package service

import (
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

func TestGetStatus(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"n1", "n2"} {
		if _, err := e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	e.join("n1", 1)
	if _, err := e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "data", Path: "/srv/data"}}); err != nil {
		t.Fatal(err)
	}
	e.put(statev1.SessionKey(1), &statev1.SessionRecord{SessionId: 1, Node: "n1"})
	st, err := e.cluster.GetStatus(e.ctx, &adminv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 2 || st.NodesUp != 1 || st.ShareCount != 1 || st.UserCount != 0 || st.SessionCount != 1 ||
		st.CoordinatorVersion != "test" {
		t.Errorf("status %v", st)
	}
	if st.Etcd == nil || !st.Etcd.Healthy || len(st.Etcd.Members) != 1 || !st.Etcd.Members[0].Leader || st.Etcd.Revision == 0 {
		t.Errorf("etcd status %v", st.Etcd)
	}
}

func TestSettings(t *testing.T) {
	e := newEnv(t)
	got, err := e.cluster.GetSettings(e.ctx, &adminv1.GetSettingsRequest{})
	if err != nil || got.Settings.RequireSigning || got.Settings.MinDialect != "" {
		t.Fatalf("default settings %v, %v", got, err)
	}
	upd, err := e.cluster.UpdateSettings(e.ctx, &adminv1.UpdateSettingsRequest{
		Settings:   &adminv1.Settings{RequireSigning: true, MinDialect: "3.0", AllowGuest: true},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"require_signing", "min_dialect"}},
	})
	if err != nil || !upd.Settings.RequireSigning || upd.Settings.MinDialect != "3.0" || upd.Settings.AllowGuest {
		t.Fatalf("UpdateSettings = %v, %v", upd, err)
	}
	got, _ = e.cluster.GetSettings(e.ctx, &adminv1.GetSettingsRequest{})
	if !got.Settings.RequireSigning || got.Settings.MinDialect != "3.0" {
		t.Errorf("settings after update %v", got)
	}
	bad := []*adminv1.UpdateSettingsRequest{
		{Settings: &adminv1.Settings{}},
		{Settings: &adminv1.Settings{MinDialect: "4.0"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"min_dialect"}}},
		{Settings: &adminv1.Settings{}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"colour"}}},
		{Settings: &adminv1.Settings{MaxDialect: "2.1"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_dialect"}}},
	}
	for _, r := range bad {
		_, err := e.cluster.UpdateSettings(e.ctx, r)
		wantCode(t, err, codes.InvalidArgument, "update "+r.String())
	}
}
