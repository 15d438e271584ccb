package smb2

import "bytes"

// SMB1ProtocolID is the first four bytes of an SMB1 header: 0xFF 'S' 'M' 'B'.
const SMB1ProtocolID uint32 = 0x424d53ff

const (
	smb1HeaderSize   = 32
	smb1ComNegotiate = 0x72
)

// DecodeSMB1Negotiate parses the SMB_COM_NEGOTIATE request a client sends
// first when it also speaks SMB1 ([MS-CIFS] 2.2.4.52.1, [MS-SMB2] 3.3.5.3.1),
// returning its dialect strings ("NT LM 0.12", "SMB 2.002", "SMB 2.???").
func DecodeSMB1Negotiate(msg []byte) (dialects []string, err error) {
	if len(msg) < smb1HeaderSize+3 {
		return nil, ErrShortMessage
	}
	if le.Uint32(msg) != SMB1ProtocolID || msg[4] != smb1ComNegotiate {
		return nil, ErrBadProtocolID
	}
	if msg[smb1HeaderSize] != 0 { // WordCount
		return nil, ErrMalformed
	}
	n := int(le.Uint16(msg[smb1HeaderSize+1:])) // ByteCount
	p := msg[smb1HeaderSize+3:]
	if n > len(p) {
		return nil, ErrShortMessage
	}
	p = p[:n]
	for len(p) > 0 {
		if p[0] != 0x02 { // BufferFormat: dialect string
			return nil, ErrMalformed
		}
		end := bytes.IndexByte(p[1:], 0)
		if end < 0 {
			return nil, ErrMalformed
		}
		dialects = append(dialects, string(p[1:1+end]))
		p = p[2+end:]
	}
	if len(dialects) == 0 {
		return nil, ErrMalformed
	}
	return dialects, nil
}

// EncodeSMB1Negotiate builds an SMB1 NEGOTIATE request offering dialects, as
// a test client would send it.
func EncodeSMB1Negotiate(dialects []string) []byte {
	b := make([]byte, smb1HeaderSize+3)
	le.PutUint32(b, SMB1ProtocolID)
	b[4] = smb1ComNegotiate
	b[9] = 0x18                  // Flags: case insensitive, canonicalized paths
	le.PutUint16(b[10:], 0xC853) // Flags2: unicode, NT status, extended security…
	for _, d := range dialects {
		b = append(b, 0x02)
		b = append(b, d...)
		b = append(b, 0)
	}
	le.PutUint16(b[smb1HeaderSize+1:], uint16(len(b)-smb1HeaderSize-3))
	return b
}
