package server_test

import (
	"bytes"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestPipelinedResponses: requests that arrive in one segment are answered
// even though the read loop holds their responses back while more requests
// are buffered (conn.send): the last one is written when the reader would
// block, and every response carries the right data.
func TestPipelinedResponses(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	fid, err := c.Create("pipelined.bin")
	if err != nil {
		t.Fatal(err)
	}
	const n, bs = 24, 4096
	data := make([]byte, n*bs)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	if _, err := c.Write(fid, 0, data); err != nil {
		t.Fatal(err)
	}
	if outstanding(c) < 2*n {
		t.Fatalf("%d credits, want %d", outstanding(c), 2*n)
	}
	// n READs and n WRITEs (rewriting the same bytes) in one TCP write.
	var wire []byte
	frame := func(h smb2.Header, body []byte) {
		msg := make([]byte, 4+smb2.HeaderSize+len(body))
		smb2.PutTransportHeader(msg, smb2.HeaderSize+len(body))
		h.Encode(msg[4:])
		copy(msg[4+smb2.HeaderSize:], body)
		wire = append(wire, msg...)
		c.NextMessageID++
	}
	for i := range n {
		frame(c.Header(smb2.CmdRead), servertest.Body(&smb2.ReadRequest{Length: bs, Offset: uint64(i * bs), FileID: fid}))
		frame(c.Header(smb2.CmdWrite), servertest.Body(&smb2.WriteRequest{Offset: uint64(i * bs), FileID: fid, Data: data[i*bs : (i+1)*bs]}))
	}
	first := c.NextMessageID - 2*n
	// Then a part of one more READ: the reader holds responses while it
	// has buffered input, and must write them before it blocks for the rest.
	last := len(wire)
	frame(c.Header(smb2.CmdRead), servertest.Body(&smb2.ReadRequest{Length: bs, FileID: fid}))
	if err := c.SendRaw(wire[:last+10]); err != nil {
		t.Fatal(err)
	}
	for j := range 2*n + 1 {
		if j == 2*n {
			if err := c.SendRaw(wire[last+10:]); err != nil {
				t.Fatal(err)
			}
		}
		hs, pdus, err := c.Recv()
		if err != nil {
			t.Fatalf("waiting for the pipelined responses: %v", err)
		}
		h := hs[0]
		if h.Status != 0 {
			t.Fatalf("mid %d: status %#x", h.MessageID, h.Status)
		}
		i := int(h.MessageID-first) / 2 % n
		switch h.Command {
		case smb2.CmdRead:
			var resp smb2.ReadResponse
			if err := resp.Decode(pdus[0]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(resp.Data, data[i*bs:(i+1)*bs]) {
				t.Fatalf("READ %d: wrong data", i)
			}
		case smb2.CmdWrite:
			var resp smb2.WriteResponse
			if err := resp.Decode(pdus[0]); err != nil || resp.Count != bs {
				t.Fatalf("WRITE %d: %v, count %d", i, err, resp.Count)
			}
		default:
			t.Fatalf("unexpected %v response", h.Command)
		}
	}
}
