package handoff

import (
	"encoding/binary"
	"errors"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// WRITEs of a handed-over channel whose payload stays on the node its
// client is connected to: the arrival node sends the home node the
// request without its payload (SessionService.RemoteWrite,
// server.Adopted.ServeRemoteWrite); the home node runs it as if read from
// the connection and, where it would write the payload, has the arrival
// node write it to its own descriptor of the file (opened through its own
// share, arrivalfile.go) and, for a write-through WRITE, flush it there;
// then it finishes the WRITE and answers through the relay. A file the
// arrival node could not open takes the relay, payload and all. A signed
// WRITE's signature covers its payload: the arrival node verifies it with
// the channel's key (SessionService.SessionKeys) before it offers the
// WRITE, and the home node takes it as verified.

// remoteWritable reports whether msg, a message a handed-over channel's
// client sent (opened, if it came sealed), is a WRITE whose payload to
// keep here, where the payload begins, the FileId it writes, and whether
// it is signed (its signature is then verified here first).
func remoteWritable(msg []byte, min int) (dataOff int, fid uint64, signed, ok bool) {
	var h smb2.Header
	if len(msg) < smb2.HeaderSize+48 || binary.LittleEndian.Uint32(msg) != smb2.ProtocolID || h.Decode(msg) != nil ||
		h.Command != smb2.CmdWrite || h.NextCommand != 0 || h.Flags&smb2.FlagRelatedOperations != 0 {
		return 0, 0, false, false
	}
	req, err := smb2.DecodeWriteHeader(msg[smb2.HeaderSize:])
	if err != nil || int(req.Length) < min || req.Channel != 0 {
		return 0, 0, false, false
	}
	off := int(binary.LittleEndian.Uint16(msg[smb2.HeaderSize+2:]))
	if off < smb2.HeaderSize+48 || off+int(req.Length) != len(msg) {
		return 0, 0, false, false
	}
	return off, req.FileID.Persistent, h.Flags&smb2.FlagSigned != 0, true
}

// writeStep is one ask of the home node in a RemoteWrite.
type writeStep struct {
	// Write: write the payload's first N bytes at Off of the file (FileID
	// Inode); Sync: flush them to stable storage before answering.
	Write bool
	Inode uint64
	Off   int64
	N     int
	Sync  bool
	// SendData: send the payload.
	SendData bool
	// The end: the home node answered the WRITE through the relay, or
	// the arrival node is to send it through the relay.
	Answered, Forward bool
}

// serveWrite sends the home node the WRITE in frame (its payload at
// dataOff) and does what it asks. An error ends the connection.
func (a *arrival) serveWrite(frame, msg []byte, dataOff int, fid uint64, sealed, verified bool) error {
	rf, forward := a.files, a.fwd
	var h smb2.Header
	h.Decode(msg) // remoteWritable decoded it
	pf := a.remoteFile(&h, fid, true)
	defer rf.release(pf)
	if pf == nil || pf.f == nil {
		return forward(frame) // served by the home node, as a small WRITE
	}
	data := msg[dataOff:]
	x, err := a.rl.RemoteWrite(a.h.Context(), msg[:dataOff], len(data), pf.id, sealed, verified)
	if err != nil {
		return err
	}
	defer x.Close()
	for {
		st, err := x.Next()
		switch {
		case err != nil:
			return err
		case st.Forward:
			return forward(frame)
		case st.Answered:
			return nil
		case st.SendData:
			for p := data; len(p) > 0; {
				k := min(len(p), 1<<20)
				if err := x.SendData(p[:k]); err != nil {
					return err
				}
				p = p[k:]
			}
		case st.Write:
			if st.N > len(data) || st.Inode != pf.id {
				if err := x.Written(0, errors.New("not this WRITE's payload or file")); err != nil {
					return err
				}
				continue
			}
			if a.h.Fenced() {
				return errFenced // a fenced node writes nothing
			}
			n, werr := pf.f.WriteAt(data[:st.N], st.Off)
			if werr == nil && st.Sync {
				// Write-through ([MS-SMB2] 3.3.5.13): on the descriptor
				// that wrote, before the home node answers.
				werr = pf.f.Sync()
			}
			if n > 0 && (!st.Sync || werr != nil) {
				rf.wrote(pf)
			}
			if werr == nil {
				a.h.Moved(true, n)
			}
			if err := x.Written(n, werr); err != nil {
				return err
			}
		}
	}
}
