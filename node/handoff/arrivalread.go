package handoff

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// READs of a handed-over channel served by the node its client is
// connected to.
//
// A channel handed to its session's home node would send every byte it
// reads through the home node. Instead, the arrival node offers each large
// plain READ to the home node out of band (SessionService.RemoteRead,
// server.Adopted.ServeRemoteRead): the home node runs the request exactly
// as if it had read it from the connection up to the point where the
// bytes would move, and answers with the response's header and the file
// range. The arrival node then sends the header and the bytes from its
// own descriptor of the same file, opened through its own share
// (arrivalfile.go; sendfile through the connection's server.ClientWriter,
// or read and signed or sealed with the session's keys). The bytes thus
// leave through the node the client is connected to, and the home node
// does no I/O for them. What the home node answers otherwise (an error, a
// file the arrival node has not) it sends through the relay itself; a
// READ of a file the arrival node could not open goes through the relay,
// as a small one.

// errorBody is an SMB2 ERROR response's body, with no data.
var errorBody = &smb2.ErrorResponse{}

// sealKeys are what the arrival node needs of an encrypting session: open
// its sealed requests, seal the READ responses it sends (with nonces of
// its own: both nodes draw random ones).
type sealKeys struct {
	id       uint64
	enc, dec cipher.AEAD
	nonces   *signing.NonceSource
}

// sessionKeys are what the arrival node knows of a session its connection
// is a channel of: its sealing keys (nil unless it encrypts) and the
// channel's signer (nil unless it has one).
type sessionKeys struct {
	seal   *sealKeys
	signer signing.Signer
}

// keyring is what the arrival node knows of the sessions its connection
// is a channel of, asked of the home node once each.
type keyring struct {
	mu sync.Mutex
	m  map[uint64]*sessionKeys // by session id; nil: the connection is no channel of it
}

func newKeyring() *keyring { return &keyring{m: map[uint64]*sessionKeys{}} }

// keysFor returns session sid's keys, asked of the home node (ask) once;
// nil when the connection is no channel of it.
func (kr *keyring) keysFor(ctx context.Context, ask func(context.Context, uint64) (server.SessionKeys, error), sid uint64) *sessionKeys {
	kr.mu.Lock()
	sk, known := kr.m[sid]
	kr.mu.Unlock()
	if known {
		return sk
	}
	ctx, cancel := context.WithTimeout(ctx, handoffWait) // a stopped home node does not hold the reader
	k, err := ask(ctx, sid)
	cancel()
	if err != nil {
		return nil // asked again next time
	}
	if k.OK {
		sk = &sessionKeys{}
		if len(k.ServerIn) > 0 {
			enc, err1 := signing.NewCipher(k.Cipher, k.ServerOut)
			dec, err2 := signing.NewCipher(k.Cipher, k.ServerIn)
			if err1 == nil && err2 == nil {
				sk.seal = &sealKeys{id: sid, enc: enc, dec: dec, nonces: signing.NewNonceSource()}
			}
		}
		if len(k.ChannelKey) > 0 {
			sk.signer, _ = signing.NewSigner(k.ChannelAlg, k.ChannelKey)
		}
	}
	kr.mu.Lock()
	kr.m[sid] = sk
	kr.mu.Unlock()
	return sk
}

// verifySigned reports whether msg, a plain signed message, verifies with
// its session's channel key on this connection.
func (a *arrival) verifySigned(msg []byte) bool {
	sk := a.keys.keysFor(a.h.Context(), a.rl.SessionKeys, binary.LittleEndian.Uint64(msg[40:]))
	return sk != nil && sk.signer != nil && sk.signer.Verify(msg)
}

// openSealed opens msg, a sealed message of a handed-over channel, when it
// may be a READ or WRITE to serve here (a READ request is small, a WRITE
// large); it returns the plain message and the session's keys, or nil.
func (a *arrival) openSealed(msg []byte) ([]byte, *sealKeys) {
	if len(msg) > 512 && len(msg) < a.h.IOMin() {
		return nil, nil
	}
	sid, err := signing.ParseTransformHeader(msg)
	if err != nil {
		return nil, nil
	}
	keys := a.keys.keysFor(a.h.Context(), a.rl.SessionKeys, sid)
	if keys == nil || keys.seal == nil {
		return nil, nil
	}
	plain, err := signing.Open(nil, keys.seal.dec, msg)
	if err != nil {
		return nil, nil // the home node refuses it
	}
	return plain, keys.seal
}

// remoteReadable reports whether msg, a message a handed-over channel's
// client sent, is a READ to offer the home node, and the FileId it reads.
func remoteReadable(msg []byte, min int) (uint64, bool) {
	var h smb2.Header
	if len(msg) < smb2.HeaderSize || binary.LittleEndian.Uint32(msg) != smb2.ProtocolID || h.Decode(msg) != nil ||
		h.Command != smb2.CmdRead || h.NextCommand != 0 || h.Flags&smb2.FlagRelatedOperations != 0 {
		return 0, false
	}
	var req smb2.ReadRequest
	if req.Decode(msg) != nil || int(req.Length) < min || req.Channel != 0 {
		return 0, false
	}
	return req.FileID.Persistent, true
}

// plainClose reports whether msg is a lone plaintext CLOSE, and of which
// FileId.
func plainClose(msg []byte) (uint64, bool) {
	var h smb2.Header
	if len(msg) < smb2.HeaderSize || binary.LittleEndian.Uint32(msg) != smb2.ProtocolID || h.Decode(msg) != nil ||
		h.Command != smb2.CmdClose || h.NextCommand != 0 {
		return 0, false
	}
	var req smb2.CloseRequest
	if req.Decode(msg) != nil {
		return 0, false
	}
	return req.FileID.Persistent, true
}

// serveRead offers the home node the READ in frame and sends what it
// answers. An error ends the connection.
func (a *arrival) serveRead(frame, msg []byte, fid uint64, sk *sealKeys) error {
	rf, forward := a.files, a.fwd
	var h smb2.Header
	h.Decode(msg) // remoteReadable decoded it
	pf := a.remoteFile(&h, fid, false)
	defer rf.release(pf)
	if pf == nil || pf.f == nil {
		return forward(frame) // served by the home node, as a small READ
	}
	rr, err := a.rl.RemoteRead(a.h.Context(), msg, pf.id, sk != nil)
	switch {
	case err != nil:
		return err
	case rr.Forward:
		return forward(frame)
	case rr.Answered:
		return nil
	case len(rr.Head) < smb2.HeaderSize+16:
		return errors.New("handoff: short READ response header")
	case rr.Seal && sk == nil:
		return errors.New("handoff: a sealed response to a plain request")
	}
	signed := binary.LittleEndian.Uint32(rr.Head[16:])&smb2.FlagSigned != 0
	if ff, ok := pf.f.(server.FdFile); ok && !signed && a.h.Writer.CanSendfile() && pf.share.PageCacheReads() {
		head := make([]byte, 4+len(rr.Head))
		copy(head[4:], rr.Head)
		smb2.PutTransportHeader(head, len(rr.Head)+rr.N)
		// The descriptor is held (pf) for the sendfile: a CLOSE of the
		// open going by (drop) cannot close it, and so let its number be
		// reused by another file, while its bytes are being sent.
		a.h.Moved(false, rr.N) // before the client can see the response
		w := a.h.Writer
		w.Lock()
		defer w.Unlock()
		return w.Sendfile(head, ff.Fd(), rr.Off, rr.N)
	}
	data := make([]byte, rr.N)
	n, err := pf.f.ReadAt(data, rr.Off)
	if n < rr.N && err != nil && !errors.Is(err, io.EOF) {
		return a.sendError(rr, sk, smb2.StatusUnexpectedIOError)
	}
	data = data[:n]
	binary.LittleEndian.PutUint32(rr.Head[smb2.HeaderSize+4:], uint32(n)) // DataLength
	a.h.Moved(false, n)
	return a.sendResponse(rr, sk, rr.Head, data)
}

// sendError answers a READ the home node let this node serve with an
// error, as the home node would have.
func (a *arrival) sendError(rr server.RemoteRead, sk *sealKeys, st smb2.Status) error {
	var h smb2.Header
	if err := h.Decode(rr.Head); err != nil {
		return err
	}
	h.Status = uint32(st)
	b := make([]byte, smb2.HeaderSize+errorBody.Size())
	h.Encode(b)
	errorBody.Encode(b[smb2.HeaderSize:])
	return a.sendResponse(rr, sk, b, nil)
}

// sendResponse seals or signs (as the home node said) and sends a
// response made here.
func (a *arrival) sendResponse(rr server.RemoteRead, sk *sealKeys, msg, data []byte) error {
	w := a.h.Writer
	if rr.Seal {
		out := signing.Seal(make([]byte, 4, 4+signing.TransformHeaderSize+len(msg)+len(data)+16), sk.enc, sk.nonces, sk.id, msg, data)
		smb2.PutTransportHeader(out, len(out)-4)
		w.Lock()
		defer w.Unlock()
		return w.Write(out)
	}
	if binary.LittleEndian.Uint32(msg[16:])&smb2.FlagSigned != 0 {
		sg, err := a.files.signerFor(rr.SignAlg, rr.SignKey)
		if err != nil {
			return err
		}
		clear(msg[48:64])
		sig := sg.Sign(msg, data)
		copy(msg[48:64], sig[:])
	}
	nb := make([]byte, 4)
	smb2.PutTransportHeader(nb, len(msg)+len(data))
	w.Lock()
	defer w.Unlock()
	return w.Writev([][]byte{nb, msg, data})
}

// signerFor returns the channel's signer, made once.
func (rf *remoteFiles) signerFor(alg uint16, key []byte) (signing.Signer, error) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.signer == nil || !bytes.Equal(rf.key, key) {
		sg, err := signing.NewSigner(alg, key)
		if err != nil {
			return nil, err
		}
		rf.signer, rf.key = sg, append([]byte(nil), key...)
	}
	return rf.signer, nil
}
