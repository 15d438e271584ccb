package handoff

import (
	"reflect"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/protobuf/proto"
)

// TestHandoffRoundTrip: a connection's state, moved sessions included,
// reads back as written after a trip over the wire.
func TestHandoffRoundTrip(t *testing.T) {
	st := &server.HandoffState{
		Dialect: 0x311, ClientGUID: [16]byte{1, 2, 3}, ClientCaps: 0x7f, ClientSecMode: 1, ClientDialects: []uint16{0x202, 0x311},
		ServerSecMode: 3, ServerCaps: 0x4f, Cipher: 2, SigningAlg: 1, SigningChosen: true, Preauth: signing.PreauthHash{9, 8},
		CreditsLow: 5, CreditsHigh: 70, CreditsUsed: []uint64{6, 9}, ClientAddr: "10.0.0.1:50000", LocalAddr: "10.0.0.2:445",
		Node: "n2", CreditsAtRelay: true,
		Sessions: []server.MovedSession{{
			ID: 0x1000, User: "alice", Domain: "D", Guest: true, Dialect: 0x311, ClientGUID: [16]byte{1, 2, 3},
			Cipher: 2, SigningAlg: 1, SessionKey: []byte("session"),
			Keys:      signing.Keys{Signing: []byte("s"), ServerIn: []byte("i"), ServerOut: []byte("o"), Application: []byte("a")},
			CreatedAt: time.Unix(0, 1234567), Trees: []server.MovedTree{{ID: 3, Share: "data", MaximalAccess: 0x1f01ff, EncryptData: true}},
			NextTree: 4, ChannelAlg: 2, ChannelKey: []byte("channel"), SigningRequired: true, EncryptData: true,
		}},
	}
	b, err := proto.Marshal(handoffPB(st))
	if err != nil {
		t.Fatal(err)
	}
	h := &peerv1.Handoff{}
	if err := proto.Unmarshal(b, h); err != nil {
		t.Fatal(err)
	}
	got, err := handoffOf(h)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, st)
	}
}
