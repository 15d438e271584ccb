package service

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// TestShareRoots: a share path is accepted at or under a root once
// symlinks are resolved, and refused elsewhere with a message naming the
// roots — whether it is outside outright, or reaches outside through a
// symlink, a dangling symlink, a root's name as a prefix or `..`.
func TestShareRoots(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "shares")
	mustMkdir(t, filepath.Join(root, "team"))
	mustSymlink(t, "/etc", filepath.Join(root, "etc"))
	mustSymlink(t, filepath.Join(tmp, "gone"), filepath.Join(root, "dangling"))
	mustSymlink(t, "team", filepath.Join(root, "alias"))
	mustMkdir(t, filepath.Join(tmp, "sharesx"))
	link := filepath.Join(tmp, "link")
	mustSymlink(t, root, link) // a root named through a symlink
	e := newEnvRoots(t, link)
	shareSeq = 0

	for _, p := range []string{
		root,                              // the root itself
		filepath.Join(root, "team"),       // a directory under it
		filepath.Join(root, "new", "sub"), // not created yet
		filepath.Join(root, "alias"),      // a symlink that stays inside
		filepath.Join(link, "team"),       // through the root's symlink
	} {
		create(t, e, p, codes.OK)
	}
	for _, p := range []string{
		"/etc",
		filepath.Join(root, "etc"),        // symlink to /etc
		filepath.Join(root, "etc", "ssh"), // under that symlink
		filepath.Join(tmp, "sharesx"),     // the root's name as a prefix
		filepath.Join(tmp, "sharesx", "new"),
	} {
		err := create(t, e, p, codes.PermissionDenied)
		if msg := status.Convert(err).Message(); !strings.Contains(msg, link) {
			t.Errorf("share path %s: message does not name the root %s: %q", p, link, msg)
		}
	}
	create(t, e, filepath.Join(root, "dangling"), codes.InvalidArgument)
	create(t, e, root+"/../../etc", codes.InvalidArgument) // not clean

	_, err := e.shares.UpdateShare(e.ctx, &adminv1.UpdateShareRequest{
		Share:      &adminv1.Share{Name: "s1", Path: "/etc"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"path"}},
	})
	wantCode(t, err, codes.PermissionDenied, "update a share's path to /etc")
	if _, err := e.shares.UpdateShare(e.ctx, &adminv1.UpdateShareRequest{
		Share:      &adminv1.Share{Name: "s1", Path: filepath.Join(root, "team")},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"path"}},
	}); err != nil {
		t.Errorf("update a share's path within the root: %v", err)
	}
}

// TestNoShareRoots: a coordinator without roots refuses every share path
// and says how to allow one.
func TestNoShareRoots(t *testing.T) {
	e := newEnvRoots(t)
	err := create(t, e, "/srv/data", codes.PermissionDenied)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "--share-root") {
		t.Errorf("message does not say how to allow a root: %q", msg)
	}
}

func TestCheckShareRoot(t *testing.T) {
	for dir, ok := range map[string]bool{"/srv/shares": true, "/srv": true, "/": false, "srv": false, "/srv/": false, "/srv/../etc": false, "": false} {
		if err := CheckShareRoot(dir); (err == nil) != ok {
			t.Errorf("CheckShareRoot(%q) = %v, want ok=%v", dir, err, ok)
		}
	}
}

// shareSeq numbers the shares create makes: s1, s2, ...
var shareSeq int

// create creates a share at p and checks the answer's code.
func create(t *testing.T, e *env, p string, want codes.Code) error {
	t.Helper()
	shareSeq++
	name := "s" + strconv.Itoa(shareSeq)
	_, err := e.shares.CreateShare(e.ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: name, Path: p}})
	wantCode(t, err, want, "share path "+p)
	return err
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
