package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const (
	user    = "alice"
	shareNm = "share"
	mib     = 1 << 20
	kib     = 1 << 10
)

func password() string { return framework.DefaultUsers[user] }

// randomReader returns a deterministic pseudo-random stream for seed.
func randomReader(seed uint64) io.Reader {
	return rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
}

// writeRandomFile writes size pseudo-random bytes to path and returns their
// SHA-256.
func writeRandomFile(t *testing.T, path string, size int64, seed uint64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(randomReader(seed), size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileSum returns the SHA-256 and size of the file at path.
func fileSum(t *testing.T, path string) (string, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// assertAbsent fails the test if path exists.
func assertAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s: want absent, got err=%v", path, err)
	}
}
