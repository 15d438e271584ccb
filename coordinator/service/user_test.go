package service

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
)

// TestNTHash checks NTOWFv1 against [MS-NLMP] 4.2.2.1.2 (Password
// "Password").
func TestNTHash(t *testing.T) {
	if got := hex.EncodeToString(NTHash("Password")); got != "a4f49c406510bdcab6824ee7c30fd852" {
		t.Errorf("NTHash(Password) = %s", got)
	}
}

// storedHash reads user name's raw record from etcd and opens its hash.
func (e *env) storedHash(name string) (raw []byte, hash []byte) {
	e.t.Helper()
	resp, err := etcd.Get(e.t.Context(), statev1.UserKey(name))
	if err != nil || len(resp.Kvs) != 1 {
		e.t.Fatalf("user record %s: %v", name, err)
	}
	rec := &statev1.UserRecord{}
	if _, err := e.st.Get(e.t.Context(), statev1.UserKey(name), rec); err != nil {
		e.t.Fatal(err)
	}
	hash, err = e.sealer.Open(rec.NtHash, statev1.UserKey(name))
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Kvs[0].Value, hash
}

func TestUserLifecycleAndSealedHash(t *testing.T) {
	e := newEnv(t)
	const pw = "correct horse battery staple"
	if _, err := e.users.CreateUser(e.ctx, &adminv1.CreateUserRequest{Name: "Alice", Password: pw}); err != nil {
		t.Fatal(err)
	}
	raw, hash := e.storedHash("alice")
	if !bytes.Equal(hash, NTHash(pw)) {
		t.Errorf("unsealed hash %x, want %x", hash, NTHash(pw))
	}
	if bytes.Contains(raw, NTHash(pw)) || bytes.Contains(raw, []byte(pw)) {
		t.Error("the stored record holds the NT hash or the password in clear")
	}
	_, err := e.users.CreateUser(e.ctx, &adminv1.CreateUserRequest{Name: "ALICE", Password: "x"})
	wantCode(t, err, codes.AlreadyExists, "create same user in other case")

	// A sealed hash moved under another user's key does not open.
	rec := &statev1.UserRecord{}
	if _, err := e.st.Get(e.ctx, statev1.UserKey("alice"), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sealer.Open(rec.NtHash, statev1.UserKey("bob")); err == nil {
		t.Error("alice's sealed hash opened as bob's")
	}

	set, err := e.users.SetPassword(e.ctx, &adminv1.SetPasswordRequest{Name: "alice", Password: "new password"})
	if err != nil || set.User.Name != "Alice" {
		t.Fatalf("SetPassword = %v, %v", set, err)
	}
	if _, hash := e.storedHash("alice"); !bytes.Equal(hash, NTHash("new password")) {
		t.Error("SetPassword did not change the hash")
	}

	if _, err := e.users.CreateUser(e.ctx, &adminv1.CreateUserRequest{Name: "bob", Password: "b"}); err != nil {
		t.Fatal(err)
	}
	list, err := e.users.ListUsers(e.ctx, &adminv1.ListUsersRequest{})
	if err != nil || len(list.Users) != 2 || list.Users[0].Name != "Alice" || list.Users[1].Name != "bob" {
		t.Fatalf("ListUsers = %v, %v", list, err)
	}

	if _, err := e.users.DeleteUser(e.ctx, &adminv1.DeleteUserRequest{Name: "Bob"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.users.DeleteUser(e.ctx, &adminv1.DeleteUserRequest{Name: "bob"})
	wantCode(t, err, codes.NotFound, "delete deleted user")
	_, err = e.users.SetPassword(e.ctx, &adminv1.SetPasswordRequest{Name: "bob", Password: "x"})
	wantCode(t, err, codes.NotFound, "set password of deleted user")
}

func TestUserInvalidInput(t *testing.T) {
	e := newEnv(t)
	bad := []*adminv1.CreateUserRequest{
		{Name: "", Password: "p"},
		{Name: "a\\b", Password: "p"},
		{Name: "a@b", Password: "p"},
		{Name: ".a", Password: "p"},
		{Name: strings.Repeat("a", 65), Password: "p"},
		{Name: "ok", Password: ""},
		{Name: "ok", Password: strings.Repeat("p", 257)},
	}
	for _, r := range bad {
		_, err := e.users.CreateUser(e.ctx, r)
		wantCode(t, err, codes.InvalidArgument, "create "+r.Name)
	}
	if n := e.count(statev1.UsersPrefix); n != 0 {
		t.Errorf("%d users written from invalid input", n)
	}
	_, err := e.users.SetPassword(e.ctx, &adminv1.SetPasswordRequest{Name: "nobody", Password: ""})
	wantCode(t, err, codes.InvalidArgument, "empty new password")
}
