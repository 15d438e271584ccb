package devtoken

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin-token")
	os.WriteFile(path, []byte("old token, readable by all\n"), 0o644)
	tok, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if strings.TrimSpace(string(b)) != tok || len(tok) < 40 || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %q, mode %v, token %q", b, fi.Mode(), tok)
	}
	if err := CheckPrivate(path); err != nil {
		t.Errorf("CheckPrivate of a new token: %v", err)
	}
	if again, _ := Create(path); again == tok {
		t.Error("two tokens alike")
	}
	os.Chmod(path, 0o640)
	if err := CheckPrivate(path); err == nil {
		t.Error("CheckPrivate accepts mode 0640")
	}
}

func TestPublish(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	token := filepath.Join(dir, "admin-token")
	os.WriteFile(token, []byte("t\n"), 0o600)
	link, unpublish, err := Publish("127.0.0.1:7445", token)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "config", "smbctl", "dev", "127.0.0.1:7445.token"); link != want {
		t.Errorf("link %s, want %s", link, want)
	}
	if b, err := os.ReadFile(link); err != nil || string(b) != "t\n" {
		t.Errorf("through the link: %q, %v", b, err)
	}
	fi, _ := os.Stat(filepath.Dir(link))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("link directory mode %v", fi.Mode())
	}
	// Another coordinator took the address since: its link stays.
	other := filepath.Join(dir, "other-token")
	if _, _, err := Publish("127.0.0.1:7445", other); err != nil {
		t.Fatal(err)
	}
	unpublish()
	if got, err := os.Readlink(link); err != nil || got != other {
		t.Errorf("the other coordinator's link: %q, %v", got, err)
	}
}

// TestPublishRefusesAnotherUsersHome: root with another user's $HOME
// (sudo keeping it) does not write there.
func TestPublishRefusesAnotherUsersHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	home := t.TempDir()
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	if _, _, err := Publish("127.0.0.1:7445", "/run/admin-token"); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("Publish into uid 65534's home: %v", err)
	}
}
