package command

import (
	"encoding/json"
	"strings"
	"testing"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The tests below drive smbctl against a real coordinator and record a
// transcript per noun in testdata/admin/NOUN.golden (go test -update).

func TestNode(t *testing.T) {
	c := newCoord(t)
	c.want(ExitOK, "node", "ls")
	out := c.want(ExitOK, "node", "add", "n1", "--address", "192.0.2.1,192.0.2.11:4455")
	if !joinTokenRE.MatchString(out) {
		t.Errorf("node add printed no join token:\n%s", out)
	}
	out = c.want(ExitOK, "node", "add", "-o", "json", "n2", "--address", "192.0.2.2")
	var added nodeAdded
	if err := json.Unmarshal([]byte(out), &added); err != nil || !strings.HasPrefix(added.JoinToken, statev1.JoinTokenPrefix) {
		t.Errorf("node add -o json = %q, %v", out, err)
	}
	c.want(ExitConflict, "node", "add", "n1")
	c.want(ExitUsage, "node", "add", "Bad_Name")

	// n1 joins and has a session: it is up and cannot be removed without --force.
	c.put(statev1.NodeLiveKey("n1"), &statev1.NodeLiveRecord{Name: "n1", Epoch: 3, Version: "v1.0.0",
		Addresses: []string{"192.0.2.1:445", "192.0.2.11:4455", "192.0.2.2:445"}, StartTime: timestamppb.New(testNow)})
	c.put(statev1.ChannelKey("n1", 0x42), &statev1.ChannelRecord{SessionId: 0x42, Node: "n1", ClientAddresses: []string{"198.51.100.7:50000"}})
	c.want(ExitOK, "node", "ls")
	c.want(ExitOK, "node", "ls", "-o", "json")
	c.want(ExitOK, "node", "get", "n1")
	c.want(ExitOK, "node", "drain", "n1")
	c.want(ExitIncomplete, "node", "drain", "n1", "--timeout", "1ms")
	c.want(ExitOK, "node", "drain", "n2", "--timeout", "1s", "-o", "json")
	c.want(ExitUsage, "node", "drain", "n2", "--timeout", "48h")
	c.want(ExitOK, "node", "resume", "n1")
	c.want(ExitConflict, "node", "rm", "n1")
	c.want(ExitOK, "node", "rm", "n1", "--force")
	c.want(ExitOK, "node", "rm", "-o", "json", "n2")
	c.want(ExitNotFound, "node", "get", "n1")
	c.want(ExitNotFound, "node", "rm", "n9")
	golden(t, "admin/node.golden", c.out.String())
}

func TestShare(t *testing.T) {
	c := newCoord(t)
	c.want(ExitOK, "share", "ls", "-o", "json")
	c.want(ExitOK, "share", "add", "data", "/srv/data", "--comment", "Team data")
	c.want(ExitOK, "share", "add", "--read-only", "--encrypt", "archive$", "/srv/archive", "-o", "json")
	c.want(ExitConflict, "share", "add", "DATA", "/srv/other")
	c.want(ExitUsage, "share", "add", "data2", "relative/path")
	c.want(ExitUsage, "share", "add", "data2")
	c.want(ExitOK, "share", "ls")
	c.want(ExitOK, "share", "ls", "-o", "json")
	c.want(ExitOK, "share", "get", "data")
	c.want(ExitOK, "share", "set", "data", "--read-only", "--comment", "")
	c.want(ExitOK, "share", "set", "data", "--read-only=false", "--hidden", "-o", "json")
	c.want(ExitUsage, "share", "set", "data")
	c.want(ExitConflict, "share", "set", "data", "--encrypt", "--if-revision", "1")
	c.want(ExitNotFound, "share", "set", "nosuch", "--encrypt")
	c.want(ExitOK, "share", "rm", "data")
	c.want(ExitNotFound, "share", "rm", "data")
	c.want(ExitNotFound, "share", "get", "x")
	c.want(ExitOK, "share", "list")
	golden(t, "admin/share.golden", c.out.String())
}

func TestUser(t *testing.T) {
	c := newCoord(t)
	c.want(ExitOK, "user", "ls")
	if code, _, _ := c.smbctl("s3cret\n", "user", "add", "alice"); code != ExitOK {
		t.Errorf("user add with the password piped in: exit %d", code)
	}
	if code, _, _ := c.smbctl("pw-from-stdin", "user", "add", "bob", "--password-stdin", "-o", "json"); code != ExitOK {
		t.Errorf("user add --password-stdin: exit %d", code)
	}
	c.want(ExitOK, "user", "add", "carol", "--password", "in-argv")
	c.want(ExitError, "user", "add", "dave") // nothing on stdin
	c.want(ExitUsage, "user", "add", "dave", "--password", "x", "--password-stdin")
	if code, _, _ := c.smbctl("again\n", "user", "add", "ALICE"); code != ExitConflict {
		t.Errorf("user add of an existing user (other case): exit %d", code)
	}
	c.want(ExitOK, "user", "ls")
	c.want(ExitOK, "user", "ls", "-o", "json")
	if code, _, _ := c.smbctl("n3w\n", "user", "passwd", "alice"); code != ExitOK {
		t.Errorf("user passwd: exit %d", code)
	}
	if code, _, _ := c.smbctl("n3w\n", "user", "passwd", "nobody"); code != ExitNotFound {
		t.Errorf("user passwd of an unknown user: exit %d", code)
	}
	c.want(ExitOK, "user", "rm", "bob")
	c.want(ExitNotFound, "user", "rm", "bob")
	golden(t, "admin/user.golden", c.out.String())
}

// TestPasswordPrompt: with stdin a terminal, the password is asked for
// twice through readSecret (no echo), and mismatches are refused.
func TestPasswordPrompt(t *testing.T) {
	c := newCoord(t)
	for _, tc := range []struct {
		answers []string
		code    int
	}{
		{[]string{"pw1", "pw1"}, ExitOK},
		{[]string{"pw1", "pw2"}, ExitError},
		{[]string{""}, ExitError},
	} {
		var prompts []string
		var stdout, stderr strings.Builder
		e := &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return c.vars[k] },
			stdin: strings.NewReader("not read\n"), stdinTTY: true, dial: c.dial,
			readSecret: func(p string) (string, error) {
				prompts = append(prompts, p)
				a := tc.answers[0]
				tc.answers = tc.answers[1:]
				return a, nil
			}}
		code := run(t.Context(), e, []string{"user", "passwd", "erin"})
		if tc.code == ExitOK {
			// erin does not exist yet: the prompt succeeded, the coordinator said not found.
			tc.code = ExitNotFound
		}
		if code != tc.code || len(tc.answers) != 0 || !strings.HasPrefix(prompts[0], "New password for erin") {
			t.Errorf("answers %v: exit %d (want %d), prompts %q, stderr %q", tc.answers, code, tc.code, prompts, stderr.String())
		}
	}
}

func TestSessionAndOpen(t *testing.T) {
	c := newCoord(t)
	c.want(ExitOK, "session", "ls")
	c.want(ExitOK, "open", "ls", "-o", "json")
	c.want(ExitOK, "lock", "ls")
	guid := []byte{0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	c.put(statev1.SessionKey(0x42), &statev1.SessionRecord{SessionId: 0x42, Node: "n1", User: "alice", Domain: "SMBCLUSTER",
		ClientGuid: guid, ClientAddress: "198.51.100.7:50000", Dialect: 0x0311, CipherId: 4, SigningAlgorithmId: 2,
		SigningRequired: true, EncryptData: true, CreateTime: timestamppb.New(testNow)})
	c.put(statev1.SessionKey(0x1000000000043), &statev1.SessionRecord{SessionId: 0x1000000000043, Node: "n2", User: "bob",
		ClientAddress: "198.51.100.8:40000", Dialect: 0x0210})
	c.put(statev1.ChannelKey("n1", 0x42), &statev1.ChannelRecord{SessionId: 0x42, Node: "n1", ClientAddresses: []string{"198.51.100.7:50000"}})
	c.put(statev1.ChannelKey("n2", 0x42), &statev1.ChannelRecord{SessionId: 0x42, Node: "n2", ClientAddresses: []string{"198.51.100.7:50001", "198.51.100.7:50002"}})
	c.put(statev1.ChannelKey("n2", 0x1000000000043), &statev1.ChannelRecord{SessionId: 0x1000000000043, Node: "n2", ClientAddresses: []string{"198.51.100.8:40000"}})
	c.put(statev1.OpenKey("n1", 5), &statev1.OpenRecord{PersistentFileId: 5, Node: "n1", SessionId: 0x42, User: "alice",
		Share: "data", Path: `dir\f.txt`, DesiredAccess: 0x120089, ShareAccess: 7, OplockLevel: 0xFF, LeaseState: 7,
		Durable: true, OpenTime: timestamppb.New(testNow), OwnerNode: "n2", Locks: []*statev1.ByteRangeLock{
			{Offset: 0, Length: 4096, Exclusive: true}, {Offset: 1 << 32, Length: 1}}})
	c.put(statev1.OpenKey("n2", 9), &statev1.OpenRecord{PersistentFileId: 9, Node: "n2", SessionId: 0x1000000000043, User: "bob",
		Share: "home", Path: `notes.txt`, DesiredAccess: 0x12019f, OplockLevel: 8, OwnerNode: "n2"})

	c.want(ExitOK, "session", "ls")
	c.want(ExitOK, "session", "ls", "-o", "json")
	c.want(ExitOK, "session", "ls", "--node", "n1")
	c.want(ExitOK, "session", "ls", "--user", "BOB")
	c.want(ExitUsage, "session", "ls", "--node", "Bad Node")
	c.want(ExitOK, "open", "ls")
	c.want(ExitOK, "open", "ls", "-o", "json", "--share", "DATA")
	c.want(ExitOK, "open", "ls", "--session", "0x1000000000043")
	c.want(ExitUsage, "open", "ls", "--session", "zero")
	c.want(ExitOK, "lock", "ls")
	c.want(ExitOK, "lock", "ls", "-o", "json")
	c.want(ExitOK, "lock", "ls", "--node", "n2")
	c.want(ExitOK, "lock", "ls", "--share", "data", "--session", "0x42")
	c.want(ExitUsage, "lock", "ls", "extra")
	c.want(ExitOK, "session", "close", "0x42")
	c.want(ExitIncomplete, "session", "close", "66", "--timeout", "1ms", "-o", "json")
	c.want(ExitNotFound, "session", "close", "0x99")
	c.want(ExitUsage, "session", "close", "0")
	c.want(ExitUsage, "session", "close", "0x42", "--timeout", "1h")
	c.want(ExitOK, "open", "close", "n1", "5")
	c.want(ExitIncomplete, "open", "close", "n2", "0x9", "--timeout", "1ms")
	c.want(ExitNotFound, "open", "close", "n1", "6")
	c.want(ExitUsage, "open", "close", "n1")
	golden(t, "admin/session.golden", c.out.String())
}
