package server_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// related returns the headers of a related compound of cmds: each after
// the first carries SMB2_FLAGS_RELATED_OPERATIONS and the "use the previous
// one" session and tree ids ([MS-SMB2] 3.2.4.1.4).
func related(c *servertest.Conn, cmds ...smb2.Command) []smb2.Header {
	hs := make([]smb2.Header, len(cmds))
	for i, cmd := range cmds {
		hs[i] = c.Header(cmd)
		hs[i].MessageID = c.NextMessageID + uint64(i)
		if i > 0 {
			hs[i].Flags |= smb2.FlagRelatedOperations
			hs[i].SessionID, hs[i].TreeID = ^uint64(0), ^uint32(0)
		}
	}
	return hs
}

func statuses(hs []smb2.Header) []smb2.Status {
	out := make([]smb2.Status, len(hs))
	for i, h := range hs {
		out[i] = smb2.Status(h.Status)
	}
	return out
}

// TestCompoundRelated: CREATE, WRITE, READ and CLOSE in one related
// compound, the last three naming the file with the all-ones FileId
// ([MS-SMB2] 3.3.5.2.7.2).
func TestCompoundRelated(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range []uint16{smb2.Dialect210, smb2.Dialect311} {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, d)
		data := []byte("compounded data")
		hs := related(c, smb2.CmdCreate, smb2.CmdWrite, smb2.CmdRead, smb2.CmdClose)
		bodies := [][]byte{
			servertest.Body(servertest.CreateRequest("compound-" + servertest.DialectName(d))),
			servertest.Body(&smb2.WriteRequest{FileID: smb2.AnyFileID, Data: data}),
			servertest.Body(&smb2.ReadRequest{FileID: smb2.AnyFileID, Length: 100}),
			servertest.Body(&smb2.CloseRequest{FileID: smb2.AnyFileID}),
		}
		rhs, pdus := c.SendCompound(hs, bodies)
		if len(rhs) != 4 {
			t.Fatalf("%d responses, want 4", len(rhs))
		}
		for i, h := range rhs {
			if h.Status != 0 || h.Command != hs[i].Command || h.MessageID != hs[i].MessageID {
				t.Fatalf("response %d: %v mid %d %v", i, h.Command, h.MessageID, smb2.Status(h.Status))
			}
		}
		var rd smb2.ReadResponse
		if err := rd.Decode(pdus[2]); err != nil || !bytes.Equal(rd.Data, data) {
			t.Fatalf("READ in compound: %q, %v", rd.Data, err)
		}
		if rhs[3].Flags&smb2.FlagRelatedOperations == 0 {
			t.Errorf("related response lacks SMB2_FLAGS_RELATED_OPERATIONS")
		}
	}
}

// TestCompoundFailedCreate: when the CREATE of a related compound fails,
// the operations after it fail with the same status ([MS-SMB2] 3.3.5.2.7.2).
func TestCompoundFailedCreate(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	create := servertest.CreateRequest("does-not-exist")
	create.CreateDisposition = smb2.FileOpen
	hs := related(c, smb2.CmdCreate, smb2.CmdWrite, smb2.CmdRead, smb2.CmdClose)
	bodies := [][]byte{
		servertest.Body(create),
		servertest.Body(&smb2.WriteRequest{FileID: smb2.AnyFileID, Data: []byte("x")}),
		servertest.Body(&smb2.ReadRequest{FileID: smb2.AnyFileID, Length: 1}),
		servertest.Body(&smb2.CloseRequest{FileID: smb2.AnyFileID}),
	}
	rhs, _ := c.SendCompound(hs, bodies)
	for i, st := range statuses(rhs) {
		if st != smb2.StatusObjectNameNotFound {
			t.Errorf("response %d (%v): %v, want STATUS_OBJECT_NAME_NOT_FOUND", i, rhs[i].Command, st)
		}
	}
}

// TestCompoundUnrelated: independent requests in one message are each
// served with their own ids.
func TestCompoundUnrelated(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	hs := make([]smb2.Header, 3)
	for i, cmd := range []smb2.Command{smb2.CmdCreate, smb2.CmdEcho, smb2.CmdCreate} {
		hs[i] = c.Header(cmd)
		hs[i].MessageID += uint64(i)
	}
	bodies := [][]byte{
		servertest.Body(servertest.CreateRequest("u1")),
		servertest.Body(&smb2.EchoRequest{}),
		servertest.Body(servertest.CreateRequest("u2")),
	}
	rhs, pdus := c.SendCompound(hs, bodies)
	if got := statuses(rhs); len(got) != 3 || got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("statuses %v", got)
	}
	var fids []smb2.FileID
	for _, i := range []int{0, 2} {
		var cr smb2.CreateResponse
		if err := cr.Decode(pdus[i]); err != nil {
			t.Fatal(err)
		}
		fids = append(fids, cr.FileID)
	}
	if fids[0] == fids[1] {
		t.Fatalf("two opens share FileId %v", fids[0])
	}
	for _, f := range fids {
		if err := c.CloseFile(f); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompoundUnrelatedAnyFileID: the all-ones FileId in an unrelated
// request names no open.
func TestCompoundUnrelatedAnyFileID(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	h, _ := c.Call(smb2.CmdRead, &smb2.ReadRequest{FileID: smb2.AnyFileID, Length: 1})
	if st := smb2.Status(h.Status); st != smb2.StatusFileClosed {
		t.Fatalf("READ of the all-ones FileId alone: %v, want STATUS_FILE_CLOSED", st)
	}
}

// TestCompoundBadNextCommand: a NextCommand that is not 8-aligned, points
// past the message or inside the header drops the connection
// ([MS-SMB2] 3.3.5.2.7), and the server serves a fresh connection.
func TestCompoundBadNextCommand(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for name, next := range map[string]uint32{
		"unaligned":      68,
		"past the end":   4096,
		"inside header":  8,
		"huge":           0xfffffff8,
		"exactly at end": 128, // the second PDU would be empty
	} {
		t.Run(name, func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "")
			msg := make([]byte, 128)
			h := c.Header(smb2.CmdEcho)
			h.Encode(msg)
			(&smb2.EchoRequest{}).Encode(msg[64:])
			h.MessageID++
			h.Encode(msg[64:])
			binary.LittleEndian.PutUint32(msg[20:], next)
			if err := c.SendFrame(msg); err != nil {
				t.Fatal(err)
			}
			c.ExpectClosed()
		})
	}
	servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "").Echo()
}
