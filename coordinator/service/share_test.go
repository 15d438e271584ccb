package service

import (
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

func TestShareLifecycle(t *testing.T) {
	e := newEnv(t)
	created, err := e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{
		Name: "Data", Path: "/srv/data", Comment: "team data", EncryptData: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	sh := created.Share
	if sh.Name != "Data" || sh.Path != "/srv/data" || !sh.EncryptData || sh.Revision == 0 || sh.CreateTime == nil {
		t.Fatalf("created %v", sh)
	}
	_, err = e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "data", Path: "/srv/other"}})
	wantCode(t, err, codes.AlreadyExists, "create same name in other case")

	got, err := e.shares.GetShare(e.ctx, &adminv1.GetShareRequest{Name: "DATA"})
	if err != nil || got.Share.Path != "/srv/data" || got.Share.Comment != "team data" {
		t.Fatalf("GetShare = %v, %v", got, err)
	}

	upd, err := e.shares.UpdateShare(e.ctx, &adminv1.UpdateShareRequest{
		Share:      &adminv1.Share{Name: "data", ReadOnly: true, Comment: "ignored"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"read_only"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !upd.Share.ReadOnly || upd.Share.Comment != "team data" || upd.Share.Revision <= sh.Revision {
		t.Errorf("updated %v", upd.Share)
	}
	_, err = e.shares.UpdateShare(e.ctx, &adminv1.UpdateShareRequest{
		Share:      &adminv1.Share{Name: "data", Path: "/srv/x", Revision: sh.Revision},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"path"}},
	})
	wantCode(t, err, codes.FailedPrecondition, "update at a stale revision")

	if _, err := e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "alpha$", Path: "/srv/alpha"}}); err != nil {
		t.Fatal(err)
	}
	list, err := e.shares.ListShares(e.ctx, &adminv1.ListSharesRequest{})
	if err != nil || len(list.Shares) != 2 || list.Shares[0].Name != "alpha$" || list.Shares[1].Name != "Data" {
		t.Fatalf("ListShares = %v, %v", list, err)
	}

	if _, err := e.shares.DeleteShare(e.ctx, &adminv1.DeleteShareRequest{Name: "Data"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.shares.GetShare(e.ctx, &adminv1.GetShareRequest{Name: "data"})
	wantCode(t, err, codes.NotFound, "get deleted share")
	_, err = e.shares.DeleteShare(e.ctx, &adminv1.DeleteShareRequest{Name: "data"})
	wantCode(t, err, codes.NotFound, "delete deleted share")
	_, err = e.shares.UpdateShare(e.ctx, &adminv1.UpdateShareRequest{
		Share: &adminv1.Share{Name: "data"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"comment"}},
	})
	wantCode(t, err, codes.NotFound, "update deleted share")
}

func TestShareInvalidInput(t *testing.T) {
	e := newEnv(t)
	bad := []*adminv1.Share{
		nil,
		{Name: "", Path: "/srv/a"},
		{Name: "a/b", Path: "/srv/a"},
		{Name: "a b", Path: "/srv/a"},
		{Name: "-a", Path: "/srv/a"},
		{Name: "IPC$", Path: "/srv/a"},
		{Name: "a$$", Path: "/srv/a"},
		{Name: string(make([]byte, 81)), Path: "/srv/a"},
		{Name: "a", Path: ""},
		{Name: "a", Path: "srv/a"},
		{Name: "a", Path: "/srv/../etc"},
		{Name: "a", Path: "/srv/a/"},
		{Name: "a", Path: "/"},
		{Name: "a", Path: "/srv/a\x00b"},
		{Name: "a", Path: "/srv/a", Comment: "line\nbreak"},
	}
	for _, sh := range bad {
		_, err := e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: sh})
		wantCode(t, err, codes.InvalidArgument, "create "+sh.String())
	}
	if n := e.count(statev1.SharesPrefix); n != 0 {
		t.Errorf("%d shares written from invalid input", n)
	}

	if _, err := e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "ok", Path: "/srv/ok"}}); err != nil {
		t.Fatal(err)
	}
	updates := []*adminv1.UpdateShareRequest{
		{Share: &adminv1.Share{Name: "ok"}},
		{Share: &adminv1.Share{Name: "ok", Path: "relative"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"path"}}},
		{Share: &adminv1.Share{Name: "new"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}}},
		{Share: &adminv1.Share{Name: "ok"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"owner"}}},
	}
	for _, u := range updates {
		_, err := e.shares.UpdateShare(e.ctx, u)
		wantCode(t, err, codes.InvalidArgument, "update "+u.String())
	}
	got, err := e.shares.GetShare(e.ctx, &adminv1.GetShareRequest{Name: "ok"})
	if err != nil || got.Share.Path != "/srv/ok" {
		t.Errorf("share after refused updates: %v, %v", got, err)
	}
	_, err = e.shares.GetShare(e.ctx, &adminv1.GetShareRequest{Name: "bad/name"})
	wantCode(t, err, codes.InvalidArgument, "get with a bad name")
}
