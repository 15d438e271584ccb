package server

import (
	"errors"
	"net"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

var (
	errDecrypt           = errors.New("server: cannot decrypt message")
	errValidateNegotiate = errors.New("server: FSCTL_VALIDATE_NEGOTIATE_INFO mismatch")
)

// decrypt opens a transform message ([MS-SMB2] 3.3.5.2.1.1). Any failure
// drops the connection.
func (c *conn) decrypt(msg []byte) (*[]byte, *Session, error) {
	if c.dialect < 0x0300 {
		return nil, nil, dropError{errDecrypt}
	}
	sid, err := signing.ParseTransformHeader(msg)
	if err != nil {
		return nil, nil, dropError{err}
	}
	s := c.srv.lookupSession(sid)
	// valid() orders the read of decrypter after completeSession wrote it.
	if s == nil || !s.valid() || s.decrypter == nil {
		return nil, nil, dropError{errDecrypt}
	}
	buf := getBuf(len(msg))
	plain, err := signing.Open((*buf)[:0], s.decrypter, msg)
	if err != nil {
		putBuf(buf)
		return nil, nil, dropError{err}
	}
	*buf = plain
	return buf, s, nil
}

// seal encrypts a response message (parts[0] starts with a 4-byte NetBIOS
// header that is not part of the plaintext) into a frame.
func (s *Session) seal(parts [][]byte, _ []byte) frame {
	plain := make([][]byte, len(parts))
	copy(plain, parts)
	plain[0] = plain[0][4:]
	n := 0
	for _, p := range plain {
		n += len(p)
	}
	buf := getBuf(4 + signing.TransformHeaderSize + n + 16)
	out := signing.Seal((*buf)[:4], s.encrypter, s.nonces, s.ID, plain...)
	smb2.PutTransportHeader(out, len(out)-4)
	return frame{parts: net.Buffers{out}, w: newWritten(buf)}
}

// sealReadPrefix is what precedes READ data in a sealed single response:
// NetBIOS length, TRANSFORM_HEADER, SMB2 header, READ response body.
const sealReadPrefix = 4 + signing.TransformHeaderSize + smb2.HeaderSize + smb2.ReadResponseFixedSize

// inPlacePayload is a PayloadResponse whose payload sits in a buffer laid
// out by readPayloadBuffer, so that sealing needs no copy.
type inPlacePayload interface {
	PayloadResponse
	PayloadBuffer() *[]byte
}

// signReadPrefix is what precedes READ data in a signed single response:
// NetBIOS length, SMB2 header, READ response body.
const signReadPrefix = 4 + smb2.HeaderSize + smb2.ReadResponseFixedSize

// readPayloadBuffer returns a pooled buffer for n bytes of READ data and the
// slice of it to read into. When the response will be sealed or signed, the
// data is placed behind room for the headers, so that it is encrypted or
// signed where it was read: one copy less per sealed READ, and one per
// AES-GMAC-signed READ (GCM takes the message as one slice). Release the
// buffer with PutBuffer.
func (r *Request) readPayloadBuffer(n int) (*[]byte, []byte) {
	if r.sealedLone() {
		buf := getBuf(sealReadPrefix + n + 16)
		return buf, (*buf)[sealReadPrefix : sealReadPrefix+n]
	}
	if r.disp.lone() && r.signResponse() {
		buf := getBuf(signReadPrefix + n)
		return buf, (*buf)[signReadPrefix : signReadPrefix+n]
	}
	buf := getBuf(n)
	return buf, *buf
}

// sealedLone reports whether r is the only PDU of its message and its
// response will be encrypted (see result.protect).
func (r *Request) sealedLone() bool {
	s := r.Session
	if !r.disp.lone() || s == nil || s.encrypter == nil {
		return false
	}
	return r.disp.encrypted() || s.EncryptData || r.Tree != nil && r.Tree.EncryptData
}

// inPlaceBuffer returns the buffer of a lone READ response whose data
// already sits at prefix in it (laid out by readPayloadBuffer), cut to
// prefix+data, or nil when the response is not laid out that way. spare is
// the room the buffer must have past the data.
func inPlaceBuffer(res *result, p inPlacePayload, prefix, spare int) []byte {
	payload := p.Payload()
	buf := p.PayloadBuffer()
	if buf == nil || res.body.Size() != smb2.ReadResponseFixedSize || len(payload) == 0 ||
		len(*buf) < prefix+len(payload)+spare || &(*buf)[prefix] != &payload[0] {
		return nil
	}
	return (*buf)[:prefix+len(payload)]
}

// encodeInPlace writes res's SMB2 header and READ body into hdr.
func encodeInPlace(res *result, hdr []byte) {
	res.hdr.Encode(hdr)
	res.body.Encode(hdr[smb2.HeaderSize : smb2.HeaderSize+smb2.ReadResponseFixedSize])
}

// sendInPlace sends b, a whole frame in p's buffer, whose first msgLen
// bytes after the NetBIOS header are the message.
func (c *conn) sendInPlace(res *result, p inPlacePayload, b []byte, msgLen int) {
	smb2.PutTransportHeader(b, msgLen)
	w := newWritten(nil) // p.Release returns the buffer
	w.payloads = append(w.payloads, p)
	w.hold(res.open)
	c.send(frame{parts: net.Buffers{b[:4+msgLen]}, inline: res.inline, w: w})
}

// writeSignedInPlace encodes, signs and sends a lone READ response whose
// data already sits at signReadPrefix in its buffer: the message is signed
// as one slice.
func (c *conn) writeSignedInPlace(res *result, p inPlacePayload) bool {
	b := inPlaceBuffer(res, p, signReadPrefix, 0)
	if b == nil {
		return false
	}
	msg := b[4:]
	res.hdr.Flags |= smb2.FlagSigned
	res.hdr.Signature = [16]byte{}
	encodeInPlace(res, msg)
	sig := res.signer.Sign(msg)
	copy(msg[48:64], sig[:])
	c.sendInPlace(res, p, b, len(msg))
	return true
}

// writeSealedInPlace encodes, seals and sends a lone READ response whose
// data already sits at sealReadPrefix in its buffer.
func (c *conn) writeSealedInPlace(res *result, p inPlacePayload) bool {
	b := inPlaceBuffer(res, p, sealReadPrefix, 16)
	if b == nil {
		return false
	}
	encodeInPlace(res, b[4+signing.TransformHeaderSize:])
	s := res.encrypt
	out := signing.SealInPlace(s.encrypter, s.nonces, s.ID, b[4:])
	c.sendInPlace(res, p, b, len(out))
	return true
}
