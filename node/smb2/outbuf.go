package smb2

// QUERY_DIRECTORY, CHANGE_NOTIFY and QUERY_INFO responses share one shape:
// StructureSize 9, OutputBufferOffset (2), OutputBufferLength (4), Buffer
// ([MS-SMB2] 2.2.34, 2.2.36, 2.2.38).

const (
	outputBufferStructSize = 9
	outputBufferFixed      = 8
)

func outputBufferSize(buf []byte) int { return bodySize(outputBufferStructSize, len(buf)) }

func encodeOutputBuffer(b []byte, buf []byte) {
	put16(b, outputBufferStructSize)
	off, n := putBuffer(b, outputBufferFixed, buf)
	put16(b[2:], uint16(off))
	put32(b[4:], n)
	if n == 0 {
		b[outputBufferFixed] = 0
	}
}

func decodeOutputBuffer(msg []byte) ([]byte, error) {
	b, err := fixedBody(msg, outputBufferStructSize)
	if err != nil {
		return nil, err
	}
	return span(msg, uint32(le.Uint16(b[2:])), le.Uint32(b[4:]), HeaderSize+outputBufferFixed)
}
