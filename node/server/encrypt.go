package server

import (
	"encoding/binary"
	"errors"
	"net"

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
	binary.BigEndian.PutUint32(out[0:4], uint32(len(out)-4))
	return frame{parts: net.Buffers{out}, release: func() { putBuf(buf) }}
}
