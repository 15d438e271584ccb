package statev1

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestKeysLowerCaseAndUnderRoot(t *testing.T) {
	keys := []string{
		NodeKey("N1"), NodeLiveKey("N1"), NodeEpochKey("N1"), ShareKey("Data"),
		UserKey("Alice"), SettingsKey(), SessionKey(1), ChannelKey("N1", 1),
		OpenKey("N1", 2), CloseSessionKey(3), CloseOpenKey("N1", 4),
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, Root) || k != strings.ToLower(k) {
			t.Errorf("key %q: want lower case under %s", k, Root)
		}
		if seen[k] {
			t.Errorf("key %q built twice", k)
		}
		seen[k] = true
	}
	if ShareKey("DATA") != ShareKey("data") {
		t.Error("share keys are case-sensitive")
	}
	if !strings.HasPrefix(ChannelKey("n1", 7), NodeChannelsPrefix("n1")) {
		t.Error("ChannelKey not under NodeChannelsPrefix")
	}
	if strings.HasPrefix(ChannelKey("n10", 7), NodeChannelsPrefix("n1")) {
		t.Error("node n10's channels under n1's prefix")
	}
	if got := LastKeyPart(UserKey("Bob")); got != "bob" {
		t.Errorf("LastKeyPart = %q", got)
	}
}

func TestIDKeyPartRoundTrip(t *testing.T) {
	for _, id := range []uint64{0, 1, 0xdeadbeef, 1<<64 - 1} {
		got, err := ParseIDKeyPart(IDKeyPart(id))
		if err != nil || got != id {
			t.Errorf("ParseIDKeyPart(IDKeyPart(%x)) = %x, %v", id, got, err)
		}
	}
	for _, bad := range []string{"", "1", "000000000000000G", "000000000000000A", "00000000000000000"} {
		if _, err := ParseIDKeyPart(bad); err == nil {
			t.Errorf("ParseIDKeyPart(%q) succeeded", bad)
		}
	}
}

func FuzzParseIDKeyPart(f *testing.F) {
	f.Add("00000000deadbeef")
	f.Add("x")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIDKeyPart(s)
		if err == nil && IDKeyPart(id) != s {
			t.Fatalf("%q parsed to %x which formats as %q", s, id, IDKeyPart(id))
		}
	})
}

func TestSealRoundTrip(t *testing.T) {
	s, err := NewSealer(bytes.Repeat([]byte("k"), 32))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("0123456789abcdef")
	v := s.Seal(secret, UserKey("alice"))
	if bytes.Contains(v.Ciphertext, secret) {
		t.Fatal("ciphertext contains the plaintext")
	}
	got, err := s.Open(v, UserKey("alice"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %x, %v", got, err)
	}
	if _, err := s.Open(v, UserKey("bob")); !errors.Is(err, ErrSealedOpen) {
		t.Errorf("Open under another key: %v", err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte("o"), 32))
	if _, err := other.Open(v, UserKey("alice")); !errors.Is(err, ErrSealedOpen) {
		t.Errorf("Open with another secret: %v", err)
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Error("short secret accepted")
	}
}

func TestJoinToken(t *testing.T) {
	tok := NewJoinToken()
	if !strings.HasPrefix(tok, JoinTokenPrefix) || tok == NewJoinToken() {
		t.Fatalf("token %q", tok)
	}
	h := HashJoinToken(tok)
	if !CheckJoinToken(tok, h) || CheckJoinToken(tok+"x", h) || CheckJoinToken(tok, h[:5]) {
		t.Error("CheckJoinToken wrong")
	}
}
