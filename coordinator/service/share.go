package service

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// shareService implements adminv1.ShareService over ShareRecords.
type shareService struct {
	// Unsafe, not Unimplemented: a missing method fails to compile.
	adminv1.UnsafeShareServiceServer
	b *backend
}

// checkShare validates every settable field of sh.
func checkShare(sh *adminv1.Share) error {
	if err := checkShareName(sh.GetName()); err != nil {
		return err
	}
	if err := checkPath(sh.GetPath()); err != nil {
		return err
	}
	return checkText("share comment", sh.GetComment(), maxComment)
}

func (s *shareService) CreateShare(ctx context.Context, req *adminv1.CreateShareRequest) (*adminv1.CreateShareResponse, error) {
	sh := req.GetShare()
	if sh == nil {
		return nil, invalidf("share is missing")
	}
	if err := checkShare(sh); err != nil {
		return nil, invalid(err)
	}
	if err := s.b.checkShareRoots(sh.Path); err != nil {
		return nil, err
	}
	now := timestamppb.New(s.b.now())
	rec := &statev1.ShareRecord{
		Name: sh.Name, Path: sh.Path, Comment: sh.Comment, ReadOnly: sh.ReadOnly,
		EncryptData: sh.EncryptData, Hidden: sh.Hidden,
		ContinuousAvailability: sh.ContinuousAvailability,
		SkipStorageCheck:       sh.SkipStorageCheck,
		VolumeId:               newVolumeID(),
		CreateTime:             now, UpdateTime: now,
	}
	rev, err := s.b.st.Create(ctx, statev1.ShareKey(sh.Name), rec)
	if err != nil {
		return nil, storeError(err, quote("share", sh.Name))
	}
	s.b.log.Info("share created", "share", sh.Name, "path", sh.Path)
	return &adminv1.CreateShareResponse{Share: shareOf(rec, rev)}, nil
}

// shareFields are the UpdateShare mask paths and how each applies.
var shareFields = map[string]func(rec *statev1.ShareRecord, sh *adminv1.Share){
	"path":                    func(r *statev1.ShareRecord, sh *adminv1.Share) { r.Path = sh.Path },
	"comment":                 func(r *statev1.ShareRecord, sh *adminv1.Share) { r.Comment = sh.Comment },
	"read_only":               func(r *statev1.ShareRecord, sh *adminv1.Share) { r.ReadOnly = sh.ReadOnly },
	"encrypt_data":            func(r *statev1.ShareRecord, sh *adminv1.Share) { r.EncryptData = sh.EncryptData },
	"hidden":                  func(r *statev1.ShareRecord, sh *adminv1.Share) { r.Hidden = sh.Hidden },
	"continuous_availability": func(r *statev1.ShareRecord, sh *adminv1.Share) { r.ContinuousAvailability = sh.ContinuousAvailability },
	"skip_storage_check":      func(r *statev1.ShareRecord, sh *adminv1.Share) { r.SkipStorageCheck = sh.SkipStorageCheck },
}

// newVolumeID picks a share's VolumeId: random, never 0.
func newVolumeID() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

func (s *shareService) UpdateShare(ctx context.Context, req *adminv1.UpdateShareRequest) (*adminv1.UpdateShareResponse, error) {
	sh := req.GetShare()
	if sh == nil {
		return nil, invalidf("share is missing")
	}
	if err := checkShareName(sh.Name); err != nil {
		return nil, invalid(err)
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return nil, invalidf("update_mask is empty: name the fields to change (path, comment, read_only, encrypt_data, hidden, continuous_availability, skip_storage_check)")
	}
	for _, p := range paths {
		if p == "name" {
			return nil, invalidf("a share cannot be renamed: create a share with the new name and delete the old one")
		}
		if shareFields[p] == nil {
			return nil, invalidf("update_mask: unknown field %q (use path, comment, read_only, encrypt_data, hidden, continuous_availability, skip_storage_check)", p)
		}
	}
	key := statev1.ShareKey(sh.Name)
	rec := &statev1.ShareRecord{}
	for {
		rev, err := s.b.st.Get(ctx, key, rec)
		if err != nil {
			return nil, storeError(err, quote("share", sh.Name))
		}
		if sh.Revision != 0 && sh.Revision != rev {
			return nil, storeError(store.ErrConflict, quote("share", sh.Name))
		}
		for _, p := range paths {
			shareFields[p](rec, sh)
		}
		rec.UpdateTime = timestamppb.New(s.b.now())
		if err := checkShare(shareOf(rec, rev)); err != nil {
			return nil, invalid(err)
		}
		if slices.Contains(paths, "path") {
			if err := s.b.checkShareRoots(rec.Path); err != nil {
				return nil, err
			}
		}
		rev, err = s.b.st.Update(ctx, key, rec, rev)
		if errors.Is(err, store.ErrConflict) && sh.Revision == 0 {
			continue // changed meanwhile and the caller did not pin a revision
		}
		if err != nil {
			return nil, storeError(err, quote("share", sh.Name))
		}
		s.b.log.Info("share updated", "share", rec.Name, "fields", paths)
		return &adminv1.UpdateShareResponse{Share: shareOf(rec, rev)}, nil
	}
}

func (s *shareService) DeleteShare(ctx context.Context, req *adminv1.DeleteShareRequest) (*adminv1.DeleteShareResponse, error) {
	if err := checkShareName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	if err := s.b.st.Delete(ctx, statev1.ShareKey(req.Name), 0); err != nil {
		return nil, storeError(err, quote("share", req.Name))
	}
	s.b.log.Info("share deleted", "share", req.Name)
	return &adminv1.DeleteShareResponse{}, nil
}

func (s *shareService) ListShares(ctx context.Context, req *adminv1.ListSharesRequest) (*adminv1.ListSharesResponse, error) {
	items, err := store.List(ctx, s.b.st, statev1.SharesPrefix, func() *statev1.ShareRecord { return &statev1.ShareRecord{} })
	if err != nil {
		return nil, storeError(err, "shares")
	}
	views, err := s.views(ctx, "")
	if err != nil {
		return nil, err
	}
	resp := &adminv1.ListSharesResponse{}
	for _, it := range items {
		sh := shareOf(it.Record, it.ModRevision)
		sh.Views = views[strings.ToLower(sh.Name)]
		resp.Shares = append(resp.Shares, sh)
	}
	return resp, nil
}

func (s *shareService) GetShare(ctx context.Context, req *adminv1.GetShareRequest) (*adminv1.GetShareResponse, error) {
	if err := checkShareName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	rec := &statev1.ShareRecord{}
	rev, err := s.b.st.Get(ctx, statev1.ShareKey(req.Name), rec)
	if err != nil {
		return nil, storeError(err, quote("share", req.Name))
	}
	views, err := s.views(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	sh := shareOf(rec, rev)
	sh.Views = views[strings.ToLower(sh.Name)]
	return &adminv1.GetShareResponse{Share: sh}, nil
}

// views reads how the live nodes serve share name (every share when
// name is empty), by lower-case share name, in node order.
func (s *shareService) views(ctx context.Context, name string) (map[string][]*adminv1.ShareView, error) {
	prefix := statev1.ShareViewsPrefix
	if name != "" {
		prefix = statev1.ShareViewKey(name, "")
	}
	items, err := store.List(ctx, s.b.st, prefix, func() *statev1.ShareViewRecord { return &statev1.ShareViewRecord{} })
	if err != nil {
		return nil, storeError(err, "share views")
	}
	out := map[string][]*adminv1.ShareView{}
	for _, it := range items {
		rest := strings.TrimPrefix(it.Key, statev1.ShareViewsPrefix)
		share, node, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		r := it.Record
		out[share] = append(out[share], &adminv1.ShareView{
			Node: node, State: r.State, Reason: r.Reason, Since: proto.CloneOf(r.Since), ZeroCopy: r.ZeroCopy,
		})
	}
	return out, nil
}

// shareOf converts a record to its API form.
func shareOf(r *statev1.ShareRecord, rev int64) *adminv1.Share {
	return &adminv1.Share{
		Name: r.Name, Path: r.Path, Comment: r.Comment, ReadOnly: r.ReadOnly,
		EncryptData: r.EncryptData, Hidden: r.Hidden,
		ContinuousAvailability: r.ContinuousAvailability,
		CreateTime:             proto.CloneOf(r.CreateTime), UpdateTime: proto.CloneOf(r.UpdateTime),
		Revision: rev, SkipStorageCheck: r.SkipStorageCheck, VolumeId: statev1.VolumeID(r),
	}
}
