package smb2

// SplitCompound splits a (decrypted) message into its PDUs by NextCommand
// ([MS-SMB2] 3.3.5.2.7): each NextCommand must be a multiple of 8, at least
// a header long and inside the message; the last PDU has NextCommand 0 and
// extends to the end. Every PDU starts with a valid SMB2 header. The PDUs
// alias msg.
func SplitCompound(msg []byte) (pdus [][]byte, err error) {
	return AppendCompound(nil, msg)
}

// AppendCompound is SplitCompound appending the PDUs to pdus, so that a
// caller can split into a slice it reuses.
func AppendCompound(pdus [][]byte, msg []byte) ([][]byte, error) {
	for {
		if len(msg) < HeaderSize {
			return nil, ErrShortHeader
		}
		if le.Uint32(msg) != ProtocolID {
			return nil, ErrBadProtocolID
		}
		if le.Uint16(msg[4:]) != HeaderSize {
			return nil, ErrBadStructureSize
		}
		next := le.Uint32(msg[20:])
		if next == 0 {
			return append(pdus, msg), nil
		}
		if next%8 != 0 || next < HeaderSize || uint64(next) > uint64(len(msg)) {
			return nil, ErrBadOffset
		}
		pdus = append(pdus, msg[:next:next])
		msg = msg[next:]
	}
}
