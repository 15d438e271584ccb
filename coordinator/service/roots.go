package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
)

// CheckShareRoot validates a configured share root (smbcoord --share-root):
// an absolute, clean directory path other than "/".
func CheckShareRoot(dir string) error {
	switch {
	case !filepath.IsAbs(dir):
		return fmt.Errorf("share root %q is relative: give an absolute directory", dir)
	case filepath.Clean(dir) != dir:
		return fmt.Errorf("share root %q is not clean: use %q", dir, filepath.Clean(dir))
	case dir == "/":
		return fmt.Errorf("share root \"/\" would allow exporting any directory: give the directory shares live under")
	}
	return nil
}

// checkShareRoots refuses a share path that does not lie at or under one
// of the configured roots once symlinks are resolved (p is absolute and
// clean: checkPath ran first). Roots are resolved on every call, so a root
// created after the coordinator started counts.
func (b *backend) checkShareRoots(p string) error {
	if len(b.roots) == 0 {
		return errorf(codes.PermissionDenied, "share path %q refused: this coordinator allows no share roots (start smbcoord with --share-root DIR)", p)
	}
	real, err := resolvePath(p)
	if err != nil {
		return invalidf("share path %q: %v", p, err)
	}
	for _, r := range b.roots {
		if rr, err := resolvePath(r); err == nil && within(real, rr) {
			return nil
		}
	}
	shown := fmt.Sprintf("%q", p)
	if real != p {
		shown = fmt.Sprintf("%q (which resolves to %q)", p, real)
	}
	return errorf(codes.PermissionDenied, "share path %s is outside the share roots this coordinator allows (%s): create the share under one of them, or start smbcoord with --share-root",
		shown, strings.Join(b.roots, ", "))
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// resolvePath returns the absolute path p with every symlink in it
// resolved as this host sees it. Components that do not exist (the path
// may be created later, or live only on the nodes) are kept as they are;
// a dangling symlink is an error, since what it points to could be
// created outside every root afterwards.
func resolvePath(p string) (string, error) {
	p = filepath.Clean(p)
	var rest []string
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return "", fmt.Errorf("%s is a symlink to a missing target", p)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}
