package smb2

// Several requests and responses are just StructureSize and a reserved
// field: LOGOFF, ECHO, CANCEL, TREE_DISCONNECT, FLUSH response, LOCK
// response (4 bytes) and SET_INFO response (2 bytes).

func decodeEmpty(msg []byte, structSize uint16) error {
	_, err := fixedBody(msg, structSize)
	return err
}

func encodeEmpty(b []byte, structSize uint16) {
	put16(b, structSize)
	zero(b[2:structSize])
}

const emptyStructSize = 4
