package service

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/smbcluster/smbcluster/coordinator/store"
	"github.com/smbcluster/smbcluster/internal/nthash"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// userService implements adminv1.UserService over UserRecords.
type userService struct {
	// Unsafe, not Unimplemented: a missing method fails to compile.
	adminv1.UnsafeUserServiceServer
	b *backend
}

// NTHash is the NT one-way function of password ([MS-NLMP] 3.3.1 NTOWFv1,
// also what NTOWFv2 keys on), as the nodes compute it.
func NTHash(password string) []byte {
	h := nthash.Of(password)
	return h[:]
}

func (s *userService) CreateUser(ctx context.Context, req *adminv1.CreateUserRequest) (*adminv1.CreateUserResponse, error) {
	name := req.GetName()
	if err := checkUserName(name); err != nil {
		return nil, invalid(err)
	}
	if err := checkPassword(req.GetPassword()); err != nil {
		return nil, invalid(err)
	}
	key := statev1.UserKey(name)
	now := timestamppb.New(s.b.now())
	rec := &statev1.UserRecord{
		Name:               name,
		NtHash:             s.b.sealer.Seal(NTHash(req.Password), key),
		CreateTime:         now,
		PasswordChangeTime: now,
	}
	if _, err := s.b.st.Create(ctx, key, rec); err != nil {
		return nil, storeError(err, quote("user", name))
	}
	s.b.log.Info("user created", "user", name)
	return &adminv1.CreateUserResponse{User: userOf(rec)}, nil
}

func (s *userService) DeleteUser(ctx context.Context, req *adminv1.DeleteUserRequest) (*adminv1.DeleteUserResponse, error) {
	if err := checkUserName(req.GetName()); err != nil {
		return nil, invalid(err)
	}
	if err := s.b.st.Delete(ctx, statev1.UserKey(req.Name), 0); err != nil {
		return nil, storeError(err, quote("user", req.Name))
	}
	s.b.log.Info("user deleted", "user", req.Name)
	return &adminv1.DeleteUserResponse{}, nil
}

func (s *userService) SetPassword(ctx context.Context, req *adminv1.SetPasswordRequest) (*adminv1.SetPasswordResponse, error) {
	name := req.GetName()
	if err := checkUserName(name); err != nil {
		return nil, invalid(err)
	}
	if err := checkPassword(req.GetPassword()); err != nil {
		return nil, invalid(err)
	}
	key := statev1.UserKey(name)
	sealed := s.b.sealer.Seal(NTHash(req.Password), key)
	rec := &statev1.UserRecord{}
	_, err := s.b.st.Modify(ctx, key, rec, func() error {
		rec.NtHash = sealed
		rec.PasswordChangeTime = timestamppb.New(s.b.now())
		return nil
	})
	if err != nil {
		return nil, storeError(err, quote("user", name))
	}
	s.b.log.Info("user password set", "user", rec.Name)
	return &adminv1.SetPasswordResponse{User: userOf(rec)}, nil
}

func (s *userService) ListUsers(ctx context.Context, req *adminv1.ListUsersRequest) (*adminv1.ListUsersResponse, error) {
	items, err := store.List(ctx, s.b.st, statev1.UsersPrefix, func() *statev1.UserRecord { return &statev1.UserRecord{} })
	if err != nil {
		return nil, storeError(err, "users")
	}
	resp := &adminv1.ListUsersResponse{}
	for _, it := range items {
		resp.Users = append(resp.Users, userOf(it.Record))
	}
	return resp, nil
}

// SetPrincipals replaces the Kerberos principals that log on as a user.
func (s *userService) SetPrincipals(ctx context.Context, req *adminv1.SetPrincipalsRequest) (*adminv1.SetPrincipalsResponse, error) {
	name := req.GetName()
	if err := checkUserName(name); err != nil {
		return nil, invalid(err)
	}
	for _, p := range req.GetKerberosPrincipals() {
		if err := checkPrincipal(p); err != nil {
			return nil, invalid(err)
		}
	}
	rec := &statev1.UserRecord{}
	_, err := s.b.st.Modify(ctx, statev1.UserKey(name), rec, func() error {
		rec.KerberosPrincipals = req.KerberosPrincipals
		return nil
	})
	if err != nil {
		return nil, storeError(err, quote("user", name))
	}
	s.b.log.Info("user principals set", "user", rec.Name, "principals", rec.KerberosPrincipals)
	return &adminv1.SetPrincipalsResponse{User: userOf(rec)}, nil
}

// checkPrincipal: a client principal "name@REALM", no service ("a/b").
func checkPrincipal(p string) error {
	name, realm, ok := strings.Cut(p, "@")
	switch {
	case !ok || name == "" || realm == "" || strings.Contains(realm, "@"):
		return fmt.Errorf("principal %q: want NAME@REALM", p)
	case len(p) > 256 || !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl):
		return fmt.Errorf("principal %q: at most 256 bytes of UTF-8, no control characters", p)
	}
	return nil
}

// userOf converts a record to its API form; the hash never leaves.
func userOf(r *statev1.UserRecord) *adminv1.User {
	return &adminv1.User{
		Name:               r.Name,
		CreateTime:         proto.CloneOf(r.CreateTime),
		PasswordChangeTime: proto.CloneOf(r.PasswordChangeTime),
		KerberosPrincipals: r.KerberosPrincipals,
	}
}
