package handoff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/sockio"
)

// The arrival side: a connection the node's server gave up
// (server.Hijacked), carried between its client and the home node of the
// session it binds to.
//
// The client's frames are read one by one and sent on the Relay stream as
// they came, but for large READs and WRITEs, whose bytes move here, from
// and to this node's own descriptor of the file (arrivalread.go,
// arrivalwrite.go, arrivalfile.go). What the home node sends back is
// written to the client a whole write at a time.

// maxFrame bounds one frame of a carried connection: the largest WRITE a
// node advertises plus room for headers, compounds and the transform
// header (the engine's own bound).
const maxFrame = 8<<20 + 64<<10

// errFenced ends a carried connection of a fenced node: what it reads from
// then on goes nowhere, and it writes nothing to a file.
var errFenced = errors.New("handoff: the node is fenced")

// carrier carries a connection the server gave up over a Relay stream
// (server.Carrier).
type carrier struct{ rl *clientRelay }

// Carry implements server.Carrier: first the frame the server read, then
// what the client sends, until the client or the home node ends the
// connection.
func (cr carrier) Carry(h *server.Hijacked) error {
	rl := cr.rl
	defer rl.Close()
	if err := rl.Send(h.First); err != nil {
		return fmt.Errorf("handing the connection over: %w", err)
	}
	a := &arrival{h: h, rl: rl, files: &remoteFiles{files: map[remoteFile]*peerFile{}}, keys: newKeyring()}
	a.fwd = a.forward
	defer a.files.close()
	rl.ServeSyncs(a.files.sync)
	toClient := make(chan error, 1)
	go func() { toClient <- a.toClient() }()
	for {
		frame, ok := a.read()
		if !ok || !a.carry(frame) {
			break
		}
	}
	a.end()
	return <-toClient
}

// arrival is a connection being carried.
type arrival struct {
	h     *server.Hijacked
	rl    *clientRelay
	files *remoteFiles
	keys  *keyring
	nb    [4]byte
	mu    sync.Mutex // Send is not safe for concurrent use
	// fwd is forward, made once for the READs and WRITEs served here.
	fwd func(frame []byte) error
}

// read reads the client's next frame; false when the client closed, the
// frame is too large or the node is fenced: nothing read from then on
// goes anywhere.
func (a *arrival) read() ([]byte, bool) {
	br := a.h.Reader
	if err := br.ReadFull(a.nb[:]); err != nil {
		return nil, false
	}
	_, n := smb2.ParseTransportHeader(a.nb[:])
	if n > maxFrame {
		return nil, false
	}
	frame := make([]byte, 4+n) // Send may keep it
	copy(frame, a.nb[:])
	br.SetBulk(n >= sockio.BulkMin)
	if err := br.ReadFull(frame[4:]); err != nil {
		return nil, false
	}
	return frame, !a.h.Fenced()
}

// carry serves a large READ or WRITE of frame here, on a goroutine of its
// own (arrivalread.go, arrivalwrite.go), or sends frame to the home node;
// false when the relay failed.
func (a *arrival) carry(frame []byte) bool {
	msg, sk := frame[4:], (*sealKeys)(nil)
	if len(msg) >= 4 && binary.LittleEndian.Uint32(msg) == smb2.TransformProtocolID {
		msg, sk = a.openSealed(msg)
	}
	if dataOff, fid, signed, ok := remoteWritable(msg, a.h.IOMin()); ok && (!signed || sk == nil && a.verifySigned(msg)) {
		a.h.Go(func() { a.served(a.serveWrite(frame, msg, dataOff, fid, sk != nil, signed)) })
		return true
	}
	if fid, ok := remoteReadable(msg, a.h.IOMin()); ok {
		a.h.Go(func() { a.served(a.serveRead(frame, msg, fid, sk)) })
		return true
	}
	if err := a.forward(frame); err != nil {
		return false
	}
	if fid, ok := plainClose(frame[4:]); ok {
		a.files.drop(fid)
	}
	return true
}

// served ends the connection when serving a READ or WRITE here failed.
func (a *arrival) served(err error) {
	if err != nil {
		a.rl.log.Info("dropping a handed-over connection", "remote", a.h.Remote, "err", err)
		a.h.Conn.Close()
	}
}

// forward sends frame to the home node.
func (a *arrival) forward(frame []byte) error {
	if a.h.Fenced() {
		// Fenced since the frame was read (a READ or WRITE relayed
		// after all, arrivalfile.go): it goes nowhere.
		return errFenced
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rl.Send(frame)
}

// end follows the end of the client's frames. However it came — the
// client closed, a frame too large, the node fenced — the home node ends
// the connection standing for it, and so the relay's way back; first what
// this node wrote for it is flushed, so that a FLUSH of the opens it
// wrote to need not reach it.
func (a *arrival) end() {
	a.h.Close() // cancels the READs and WRITEs offered to the home node
	a.h.Wait()
	flushed := a.files.flushAll()
	a.mu.Lock()
	a.rl.CloseSend(flushed)
	a.mu.Unlock()
}

// toClient writes what the home node sends the client, a whole write at a
// time (a write cut in chunks holds the writer's lock until its last).
func (a *arrival) toClient() error {
	w := a.h.Writer
	held := false
	defer func() {
		if held {
			w.Unlock()
		}
	}()
	for {
		p, more, err := a.rl.Recv()
		if err != nil {
			a.h.Conn.Close() // ends the read side
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return err
		}
		if !held {
			w.Lock()
			held = true
		}
		if err := w.Write(p); err != nil {
			a.h.Conn.Close()
			return err
		}
		if !more {
			w.Unlock()
			held = false
		}
	}
}
