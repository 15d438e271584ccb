package server_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// Placeholders in the seeds that each input gets replaced with the ids of
// its connection, so that the corpus reaches past the id checks.
var (
	seedFileID    = smb2.FileID{Persistent: 0x1f1f1f1f1f1f1f1f, Volatile: 0x2f2f2f2f2f2f2f2f}
	seedSessionID = uint64(0x5e5e5e5e5e5e5e5e)
	seedTreeID    = uint32(0x7e7e7e7e)
	seedMessageID = uint64(0x4d4d4d4d4d4d4d4d)
)

func fileIDBytes(f smb2.FileID) []byte {
	b := make([]byte, 16)
	f.Encode(b)
	return b
}

// substitute replaces the placeholders in data with the fixture's ids.
func substitute(data []byte, fx *fixture) []byte {
	le := binary.LittleEndian
	data = bytes.ReplaceAll(data, fileIDBytes(seedFileID), fileIDBytes(fx.fid))
	data = bytes.ReplaceAll(data, le.AppendUint64(nil, seedSessionID), le.AppendUint64(nil, fx.c.Session.ID))
	data = bytes.ReplaceAll(data, le.AppendUint32(nil, seedTreeID), le.AppendUint32(nil, fx.c.TreeID))
	return bytes.ReplaceAll(data, le.AppendUint64(nil, seedMessageID), le.AppendUint64(nil, fx.c.NextMessageID))
}

// seedMessage is a whole request message for the raw mode.
func seedMessage(hdrs []smb2.Header, bodies [][]byte) []byte {
	var msg []byte
	for i, h := range hdrs {
		n := smb2.HeaderSize + len(bodies[i])
		if i < len(hdrs)-1 {
			n = (n + 7) &^ 7
			h.NextCommand = uint32(n)
		}
		pdu := make([]byte, n)
		h.Encode(pdu)
		copy(pdu[smb2.HeaderSize:], bodies[i])
		msg = append(msg, pdu...)
	}
	return msg
}

func seedHeader(cmd smb2.Command, i int) smb2.Header {
	return smb2.Header{Command: cmd, CreditCharge: 1, Credits: 1, MessageID: seedMessageID + uint64(i), SessionID: seedSessionID, TreeID: seedTreeID}
}

// addSeeds adds a valid encoding of every request, as a body under a
// header (raw false) and as a whole message (raw true), and a related
// compound.
func addSeeds(f *testing.F) {
	for cmd, body := range requestBodies(seedFileID) {
		f.Add(false, uint8(cmd), body)
		if cmd != smb2.CmdNegotiate && cmd != smb2.CmdSessionSetup && cmd != smb2.CmdLogoff {
			f.Add(true, uint8(0), seedMessage([]smb2.Header{seedHeader(cmd, 0)}, [][]byte{body}))
		}
	}
	hs := make([]smb2.Header, 4)
	for i, cmd := range []smb2.Command{smb2.CmdCreate, smb2.CmdWrite, smb2.CmdRead, smb2.CmdClose} {
		hs[i] = seedHeader(cmd, i)
		if i > 0 {
			hs[i].Flags |= smb2.FlagRelatedOperations
		}
	}
	f.Add(true, uint8(0), seedMessage(hs, [][]byte{
		servertest.Body(servertest.CreateRequest("compound")),
		servertest.Body(&smb2.WriteRequest{FileID: smb2.AnyFileID, Data: []byte("data")}),
		servertest.Body(&smb2.ReadRequest{FileID: smb2.AnyFileID, Length: 4}),
		servertest.Body(&smb2.CloseRequest{FileID: smb2.AnyFileID}),
	}))
}

// FuzzServerRequest sends fuzzed requests to a running server over an
// authenticated connection with a tree and an open file: (raw false) a
// body under a valid, signed header with the fuzzed command, or (raw true)
// a whole message (a plain WRITE's payload then goes through a pipe). The
// server must answer or close the connection within
// the deadline, never log a panic, and close every open once the
// connection is gone.
func FuzzServerRequest(f *testing.F) {
	// Every raw WRITE that qualifies is spliced (splice.go).
	srv := servertest.Start(f, servertest.Options{SpliceWriteThreshold: 1})
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw bool, cmd uint8, data []byte) {
		fx := newFixture(t, srv)
		c := fx.c
		data = substitute(data, fx)
		var err error
		if raw {
			err = c.SendFrame(data)
			c.NextMessageID += 64
		} else {
			_, err = c.Post(c.Header(smb2.Command(cmd%(smb2.NumCommands+2))), data)
		}
		if err == nil {
			probe(t, c)
		}
		c.Close()
		waitFor(t, "the opens of the connection to close", func() bool {
			return srv.OpenCount() == 0 && srv.Tracker.Open() == 0
		})
	})
}

// probe sends an ECHO and reads until its response arrives or the server
// closes the connection; a timeout fails the test.
func probe(t *testing.T, c *servertest.Conn) {
	h := c.Header(smb2.CmdEcho)
	if _, err := c.Post(h, servertest.Body(&smb2.EchoRequest{})); err != nil {
		return // closed while we wrote
	}
	for range 1000 {
		msg, err := c.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server neither answered nor closed the connection: %v", err)
			}
			return
		}
		var rh smb2.Header
		if rh.Decode(msg) == nil && rh.Command == smb2.CmdEcho && rh.MessageID == h.MessageID {
			return
		}
	}
	t.Fatal("no ECHO response among 1000 messages")
}
