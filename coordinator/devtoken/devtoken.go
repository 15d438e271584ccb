package devtoken

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// tokenBytes is the token's entropy; it is sent base64url-encoded.
const tokenBytes = 32

// Create writes a new random token to path, mode 0600, replacing any file
// there, and returns it.
func Create(path string) (string, error) {
	b := make([]byte, tokenBytes)
	rand.Read(b)
	tok := "dev-" + base64.RawURLEncoding.EncodeToString(b)
	f, err := os.CreateTemp(filepath.Dir(path), ".token-*") // mode 0600
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("token file: %w", err)
	}
	return tok, nil
}

// CheckPrivate refuses a token file that users other than its owner may
// read or write.
func CheckPrivate(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token file %s is open to other users (mode %04o): chmod 600 it, or remove it to have a new one made", path, fi.Mode().Perm())
	}
	return nil
}

// LinkPath is where smbctl looks for the token of the development
// coordinator at endpoint (HOST:PORT, as it listens).
func LinkPath(endpoint string) (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "smbctl", "dev", endpoint+".token"), nil
}

// Publish links LinkPath(endpoint) to tokenFile (made absolute) and returns
// the link and a function that removes it if it still points there.
func Publish(endpoint, tokenFile string) (link string, unpublish func(), err error) {
	target, err := filepath.Abs(tokenFile)
	if err != nil {
		return "", nil, err
	}
	if link, err = LinkPath(endpoint); err != nil {
		return "", nil, err
	}
	dir := filepath.Dir(link)
	if err := checkOwned(dir); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(link)+".new")
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return "", nil, err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return "", nil, err
	}
	return link, func() {
		if t, err := os.Readlink(link); err == nil && t == target {
			os.Remove(link)
		}
	}, nil
}

// checkOwned refuses to create links under a directory whose nearest
// existing ancestor belongs to another user (root started with another
// user's $HOME, as sudo may keep it): that user could not read them, and
// root would leave directories in their home they cannot remove.
func checkOwned(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(p) != p {
			continue
		}
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s belongs to uid %d, not to this process's uid %d", p, st.Uid, os.Geteuid())
		}
		return nil
	}
}
