package smb2

// WatchTree asks for changes in the whole subtree ([MS-SMB2] 2.2.35).
const WatchTree uint16 = 0x0001

// CompletionFilter bits ([MS-SMB2] 2.2.35).
const (
	FileNotifyChangeFileName    uint32 = 0x00000001
	FileNotifyChangeDirName     uint32 = 0x00000002
	FileNotifyChangeAttributes  uint32 = 0x00000004
	FileNotifyChangeSize        uint32 = 0x00000008
	FileNotifyChangeLastWrite   uint32 = 0x00000010
	FileNotifyChangeLastAccess  uint32 = 0x00000020
	FileNotifyChangeCreation    uint32 = 0x00000040
	FileNotifyChangeEa          uint32 = 0x00000080
	FileNotifyChangeSecurity    uint32 = 0x00000100
	FileNotifyChangeStreamName  uint32 = 0x00000200
	FileNotifyChangeStreamSize  uint32 = 0x00000400
	FileNotifyChangeStreamWrite uint32 = 0x00000800
)

// ChangeNotifyRequest is SMB2 CHANGE_NOTIFY Request ([MS-SMB2] 2.2.35).
type ChangeNotifyRequest struct {
	Flags              uint16
	OutputBufferLength uint32
	FileID             FileID
	CompletionFilter   uint32
}

const changeNotifyRequestStructSize = 32

// Decode parses the request from msg, the whole PDU.
func (r *ChangeNotifyRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, changeNotifyRequestStructSize)
	if err != nil {
		return err
	}
	r.Flags = le.Uint16(b[2:])
	r.OutputBufferLength = le.Uint32(b[4:])
	r.FileID = DecodeFileID(b[8:])
	r.CompletionFilter = le.Uint32(b[24:])
	return nil
}

// Size returns the encoded body size.
func (r *ChangeNotifyRequest) Size() int { return changeNotifyRequestStructSize }

// Encode writes the body into b[:32].
func (r *ChangeNotifyRequest) Encode(b []byte) {
	put16(b, changeNotifyRequestStructSize)
	put16(b[2:], r.Flags)
	put32(b[4:], r.OutputBufferLength)
	r.FileID.Encode(b[8:])
	put32(b[24:], r.CompletionFilter)
	put32(b[28:], 0)
}

// ChangeNotifyResponse is SMB2 CHANGE_NOTIFY Response ([MS-SMB2] 2.2.36);
// Buffer holds FILE_NOTIFY_INFORMATION entries.
type ChangeNotifyResponse struct {
	Buffer []byte
}

// Size returns the encoded body size.
func (r *ChangeNotifyResponse) Size() int { return outputBufferSize(r.Buffer) }

// Encode writes the body into b[:r.Size()].
func (r *ChangeNotifyResponse) Encode(b []byte) { encodeOutputBuffer(b, r.Buffer) }

// Decode parses a CHANGE_NOTIFY response from msg, the whole PDU.
func (r *ChangeNotifyResponse) Decode(msg []byte) (err error) {
	r.Buffer, err = decodeOutputBuffer(msg)
	return err
}
