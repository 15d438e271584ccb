package dcerpc

import (
	"bytes"
	"encoding/binary"
)

// The verification trailer ([MS-RPCE] 2.2.2.13) a client may append to a
// request's stub, protected by the PDU's signature, so that the server can
// check what an attacker in the middle could otherwise change unnoticed:
// the presentation context, the header fields, header signing.

var vtSignature = []byte{0x8a, 0xe3, 0x13, 0x71, 0x02, 0xf4, 0x36, 0x71}

const (
	vtCommandBitmask1   = 0x0001 // SEC_VT_COMMAND_BITMASK_1
	vtCommandPContext   = 0x0002 // SEC_VT_COMMAND_PCONTEXT
	vtCommandHeader2    = 0x0003 // SEC_VT_COMMAND_HEADER2
	vtCommandEnd        = 0x4000 // SEC_VT_COMMAND_END
	vtMustProcess       = 0x8000 // SEC_VT_MUST_PROCESS_COMMAND
	vtPContextSize      = 2 * syntaxSize
	vtHeader2Size       = 16
	vtCommandHeaderSize = 4
)

// vtExpect is what the trailer of a call must agree with.
type vtExpect struct {
	abstract, transfer SyntaxID
	callID             uint32
	contextID, opnum   uint16
}

func (c *Conn) verifiable(id uint32, contextID, opnum uint16, pc pcontext) *vtExpect {
	transfer := NDR
	if pc.ndr64 {
		transfer = NDR64
	}
	return &vtExpect{abstract: pc.abstract, transfer: transfer, callID: id, contextID: contextID, opnum: opnum}
}

// findVerificationTrailer returns the trailer at the end of stub: the last
// 4-aligned occurrence of its signature whose commands run exactly to the
// end, the last one marked SEC_VT_COMMAND_END. nil: none.
func findVerificationTrailer(stub []byte) []byte {
	for off := (len(stub) - len(vtSignature) - vtCommandHeaderSize) &^ 3; off >= 0; off -= 4 {
		if !bytes.Equal(stub[off:off+len(vtSignature)], vtSignature) {
			continue
		}
		if vtWellFormed(stub[off+len(vtSignature):]) {
			return stub[off+len(vtSignature):]
		}
	}
	return nil
}

func vtWellFormed(b []byte) bool {
	for len(b) >= vtCommandHeaderSize {
		cmd := binary.LittleEndian.Uint16(b)
		n := int(binary.LittleEndian.Uint16(b[2:]))
		if len(b)-vtCommandHeaderSize < n {
			return false
		}
		b = b[vtCommandHeaderSize+n:]
		if cmd&vtCommandEnd != 0 {
			return len(b) == 0
		}
	}
	return false
}

// checkVerificationTrailer checks the commands of the stub's verification
// trailer, if it has one, against the call; a disagreement, or a command
// this server does not know but must process, fails the call with
// nca_s_fault_access_denied ([MS-RPCE] 3.3.3.5.3 / 3.3.1.5.2).
func checkVerificationTrailer(stub []byte, want *vtExpect) error {
	b := findVerificationTrailer(stub)
	for len(b) >= vtCommandHeaderSize {
		cmd := binary.LittleEndian.Uint16(b)
		n := int(binary.LittleEndian.Uint16(b[2:]))
		v := b[vtCommandHeaderSize : vtCommandHeaderSize+n]
		b = b[vtCommandHeaderSize+n:]
		switch cmd &^ (vtCommandEnd | vtMustProcess) {
		case vtCommandBitmask1:
			// The client's header signing support: this server signs
			// whole PDUs (NTLMSSP) whether or not it was negotiated.
			if n < 4 {
				return ErrAuth
			}
		case vtCommandPContext:
			if n < vtPContextSize {
				return ErrAuth
			}
			var abstract, transfer SyntaxID
			abstract.decode(v)
			transfer.decode(v[syntaxSize:])
			if abstract != want.abstract || transfer != want.transfer {
				return ErrAuth
			}
		case vtCommandHeader2:
			if n < vtHeader2Size {
				return ErrAuth
			}
			if v[0] != TypeRequest || !bytes.Equal(v[4:8], dataRep[:]) ||
				binary.LittleEndian.Uint32(v[8:]) != want.callID ||
				binary.LittleEndian.Uint16(v[12:]) != want.contextID ||
				binary.LittleEndian.Uint16(v[14:]) != want.opnum {
				return ErrAuth
			}
		default:
			if cmd&vtMustProcess != 0 {
				return ErrAuth
			}
		}
	}
	return nil
}
