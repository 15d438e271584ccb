package state

import (
	"context"
	"errors"
	"testing"
)

// TestDuplicateCreate: an open whose CREATE names the CreateGuid of an
// open of the file another node holds is refused, unless it is a replay;
// the same node's opens (checked by the engine, with eligibility for
// replay), another client's and another file's are not.
func TestDuplicateCreate(t *testing.T) {
	ctx := context.Background()
	tb := NewTable()
	id := CreateID{Client: [16]byte{1}, Create: [16]byte{2}}
	key := FileKey{FileID: 1}
	held := &Open{Key: key, Access: accessReadAttr | 1, ShareAccess: 7, Create: id, Origin: "node2"}
	if _, err := tb.Admit(ctx, held, Request{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    *Open
		req  Request
		want error
	}{
		{"this node's open, same CreateGuid", &Open{Key: key, Access: 1, ShareAccess: 7, Create: id}, Request{}, ErrDuplicateCreate},
		{"a third node's open", &Open{Key: key, Access: 1, ShareAccess: 7, Create: id, Origin: "node3"}, Request{}, ErrDuplicateCreate},
		{"a replay", &Open{Key: key, Access: 1, ShareAccess: 7, Create: id}, Request{Replay: true}, nil},
		{"the holder's own node", &Open{Key: key, Access: 1, ShareAccess: 7, Create: id, Origin: "node2"}, Request{}, nil},
		{"another client", &Open{Key: key, Access: 1, ShareAccess: 7, Create: CreateID{Client: [16]byte{3}, Create: id.Create}}, Request{}, nil},
		{"another file", &Open{Key: FileKey{FileID: 2}, Access: 1, ShareAccess: 7, Create: id}, Request{}, nil},
		{"no DH2Q", &Open{Key: key, Access: 1, ShareAccess: 7}, Request{}, nil},
	} {
		_, err := tb.Admit(ctx, c.o, c.req, nil)
		if !errors.Is(err, c.want) || c.want == nil && err != nil {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err == nil {
			tb.Remove(c.o)
		}
	}
}
