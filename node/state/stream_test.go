package state

import (
	"context"
	"errors"
	"testing"
)

// streamOpen is an open of the named stream of the test file.
func streamOpen(stream string, access, share uint32) *Open {
	return &Open{Key: key, Stream: stream, Access: access, ShareAccess: share}
}

// Each stream is its own object for share modes and oplocks; only an open
// of the file for DELETE must share with the streams' opens ([MS-FSA]
// 2.1.5.1.2, smbtorture smb2.streams.sharemodes and .delete).
func TestStreamShareModes(t *testing.T) {
	tb := NewTable()
	ctx := context.Background()
	a := streamOpen("one", accessWriteData, 0)
	if g, err := tb.Admit(ctx, a, Request{Oplock: OplockBatch}, nil); err != nil || g.Oplock != OplockBatch {
		t.Fatalf("stream one: %v %v", g, err)
	}
	b := streamOpen("two", accessWriteData, 0)
	if g, err := tb.Admit(ctx, b, Request{Oplock: OplockBatch}, nil); err != nil || g.Oplock != OplockBatch {
		t.Fatalf("stream two: %v %v", g, err)
	}
	f := open(accessReadData, 0)
	if g, err := tb.Admit(ctx, f, Request{Oplock: OplockBatch}, nil); err != nil || g.Oplock != OplockBatch {
		t.Fatalf("file: %v %v", g, err)
	}
	if _, err := tb.Admit(ctx, streamOpen("one", accessWriteData, 0), Request{}, nil); !errors.Is(err, ErrSharingViolation) {
		t.Fatalf("same stream: %v", err)
	}
	if _, err := tb.Admit(ctx, streamOpen("two", accessDelete, 7), Request{}, nil); !errors.Is(err, ErrSharingViolation) {
		t.Fatalf("stream delete: %v", err)
	}
	if _, err := tb.Admit(ctx, open(accessDelete, 7), Request{}, nil); !errors.Is(err, ErrSharingViolation) {
		t.Fatalf("file delete beside streams not sharing delete: %v", err)
	}
	if _, err := tb.Admit(ctx, streamOpen("three", accessDelete, 7), Request{}, nil); err != nil {
		t.Fatalf("stream delete beside a file not sharing delete: %v", err)
	}
}

// A stream's pending delete deletes it with its last open; the file's
// pending delete refuses opens of every stream and deletes the file with
// the last open of any stream ([MS-FSA] 2.1.5.4).
func TestStreamDeletePending(t *testing.T) {
	tb := NewTable()
	ctx := context.Background()
	admit := func(o *Open) error { _, err := tb.Admit(ctx, o, Request{}, nil); return err }
	s1, s2 := streamOpen("s", accessDelete, 7), streamOpen("s", accessReadData, 7)
	for _, o := range []*Open{s1, s2} {
		if err := admit(o); err != nil {
			t.Fatal(err)
		}
	}
	tb.MarkDeletePending(s1, true)
	if err := admit(streamOpen("s", accessReadData, 7)); !errors.Is(err, ErrDeletePending) {
		t.Fatalf("open of a stream with a delete pending: %v", err)
	}
	if ds, df := tb.Drop(s1); ds || df {
		t.Fatalf("first close deletes %v %v", ds, df)
	}
	if ds, df := tb.Drop(s2); !ds || df {
		t.Fatalf("last close of the stream deletes %v %v", ds, df)
	}
	f, s := open(accessDelete, 7), streamOpen("s", accessReadData, 7)
	for _, o := range []*Open{f, s} {
		if err := admit(o); err != nil {
			t.Fatal(err)
		}
	}
	tb.MarkDeletePending(f, true)
	if err := admit(streamOpen("other", accessReadData, 7)); !errors.Is(err, ErrDeletePending) {
		t.Fatalf("open of a stream of a file with a delete pending: %v", err)
	}
	if ds, df := tb.Drop(f); ds || df {
		t.Fatalf("file close beside an open stream deletes %v %v", ds, df)
	}
	if ds, df := tb.Drop(s); ds || !df {
		t.Fatalf("last stream close deletes %v %v", ds, df)
	}
}

// The opens of a renamed stream follow it.
func TestRenamedStream(t *testing.T) {
	tb := NewTable()
	a := streamOpen("old", accessWriteData, 0)
	if _, err := tb.Admit(context.Background(), a, Request{}, nil); err != nil {
		t.Fatal(err)
	}
	tb.RenamedStream(key, "old", "new")
	if _, err := tb.Admit(context.Background(), streamOpen("old", accessWriteData, 0), Request{}, nil); err != nil {
		t.Fatalf("old name: %v", err)
	}
	if _, err := tb.Admit(context.Background(), streamOpen("new", accessWriteData, 0), Request{}, nil); !errors.Is(err, ErrSharingViolation) {
		t.Fatalf("new name: %v", err)
	}
}

// StreamOpen sees the opens of one data stream, except the one asked
// about (a stream rename refuses a target that is open, [MS-FSA]
// 2.1.5.15.12.1).
func TestStreamOpen(t *testing.T) {
	tb := NewTable()
	s1, s2 := streamOpen("one", accessReadData, 7), streamOpen("two", accessReadAttr, 7)
	for _, o := range []*Open{s1, s2} {
		if _, err := tb.Admit(context.Background(), o, Request{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case !tb.StreamOpen(key, "two", s1):
		t.Error("stream two's open not seen")
	case tb.StreamOpen(key, "one", s1):
		t.Error("the open asking was seen")
	case tb.StreamOpen(key, "", nil):
		t.Error("an open of the unnamed data stream seen where there is none")
	}
	tb.RenamedStream(key, "two", "")
	if !tb.StreamOpen(key, "", nil) || tb.StreamOf(s2) != "" {
		t.Errorf("the stream renamed onto the unnamed data stream not seen there (StreamOf %q)", tb.StreamOf(s2))
	}
}
