package smb2

import (
	"encoding/binary"
	"errors"
)

// HeaderSize is the size of the SMB2 packet header ([MS-SMB2] 2.2.1).
const HeaderSize = 64

// ProtocolID is the first four bytes of every SMB2 header: 0xFE 'S' 'M' 'B'.
const ProtocolID uint32 = 0x424d53fe

// TransformProtocolID starts an encrypted message ([MS-SMB2] 2.2.41).
const TransformProtocolID uint32 = 0x424d53fd

// CompressionProtocolID starts a compressed message ([MS-SMB2] 2.2.42).
const CompressionProtocolID uint32 = 0x424d53fc

// Command is an SMB2 command code ([MS-SMB2] 2.2.1.2).
type Command uint16

// SMB2 commands.
const (
	CmdNegotiate      Command = 0x0000
	CmdSessionSetup   Command = 0x0001
	CmdLogoff         Command = 0x0002
	CmdTreeConnect    Command = 0x0003
	CmdTreeDisconnect Command = 0x0004
	CmdCreate         Command = 0x0005
	CmdClose          Command = 0x0006
	CmdFlush          Command = 0x0007
	CmdRead           Command = 0x0008
	CmdWrite          Command = 0x0009
	CmdLock           Command = 0x000A
	CmdIoctl          Command = 0x000B
	CmdCancel         Command = 0x000C
	CmdEcho           Command = 0x000D
	CmdQueryDirectory Command = 0x000E
	CmdChangeNotify   Command = 0x000F
	CmdQueryInfo      Command = 0x0010
	CmdSetInfo        Command = 0x0011
	CmdOplockBreak    Command = 0x0012
	NumCommands               = 0x0013
)

var commandNames = [NumCommands]string{
	"NEGOTIATE", "SESSION_SETUP", "LOGOFF", "TREE_CONNECT", "TREE_DISCONNECT",
	"CREATE", "CLOSE", "FLUSH", "READ", "WRITE", "LOCK", "IOCTL", "CANCEL",
	"ECHO", "QUERY_DIRECTORY", "CHANGE_NOTIFY", "QUERY_INFO", "SET_INFO",
	"OPLOCK_BREAK",
}

func (c Command) String() string {
	if int(c) < len(commandNames) {
		return commandNames[c]
	}
	return "UNKNOWN"
}

// Header flags ([MS-SMB2] 2.2.1.2).
const (
	FlagServerToRedir     uint32 = 0x00000001
	FlagAsyncCommand      uint32 = 0x00000002
	FlagRelatedOperations uint32 = 0x00000004
	FlagSigned            uint32 = 0x00000008
	FlagPriorityMask      uint32 = 0x00000070
	FlagDFSOperations     uint32 = 0x10000000
	FlagReplayOperation   uint32 = 0x20000000
)

// Header is the SMB2 packet header, sync or async form ([MS-SMB2] 2.2.1).
type Header struct {
	CreditCharge uint16
	Status       uint32 // ChannelSequence/Reserved in requests of 3.x dialects
	Command      Command
	Credits      uint16 // CreditRequest in requests, CreditResponse in responses
	Flags        uint32
	NextCommand  uint32
	MessageID    uint64
	AsyncID      uint64 // when Flags has FlagAsyncCommand
	TreeID       uint32 // when Flags lacks FlagAsyncCommand
	SessionID    uint64
	Signature    [16]byte
}

// ErrShortHeader is returned when a buffer is too small for a header.
var ErrShortHeader = errors.New("smb2: message shorter than the 64-byte header")

// ErrBadProtocolID is returned when a header does not start with 0xFE 'SMB'.
var ErrBadProtocolID = errors.New("smb2: not an SMB2 header")

// ErrBadStructureSize is returned when a header or body has the wrong StructureSize.
var ErrBadStructureSize = errors.New("smb2: bad structure size")

// ChannelSequence is the request's ChannelSequence (the low 16 bits of Status).
func (h *Header) ChannelSequence() uint16 { return uint16(h.Status) }

// IsAsync reports whether the header is in the async form.
func (h *Header) IsAsync() bool { return h.Flags&FlagAsyncCommand != 0 }

// Decode parses the header at the start of b.
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShortHeader
	}
	if binary.LittleEndian.Uint32(b) != ProtocolID {
		return ErrBadProtocolID
	}
	if binary.LittleEndian.Uint16(b[4:]) != HeaderSize {
		return ErrBadStructureSize
	}
	h.CreditCharge = binary.LittleEndian.Uint16(b[6:])
	h.Status = binary.LittleEndian.Uint32(b[8:])
	h.Command = Command(binary.LittleEndian.Uint16(b[12:]))
	h.Credits = binary.LittleEndian.Uint16(b[14:])
	h.Flags = binary.LittleEndian.Uint32(b[16:])
	h.NextCommand = binary.LittleEndian.Uint32(b[20:])
	h.MessageID = binary.LittleEndian.Uint64(b[24:])
	if h.Flags&FlagAsyncCommand != 0 {
		h.AsyncID = binary.LittleEndian.Uint64(b[32:])
		h.TreeID = 0
	} else {
		h.AsyncID = 0
		h.TreeID = binary.LittleEndian.Uint32(b[36:])
	}
	h.SessionID = binary.LittleEndian.Uint64(b[40:])
	copy(h.Signature[:], b[48:64])
	return nil
}

// Encode writes the header into b[:HeaderSize].
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint32(b, ProtocolID)
	binary.LittleEndian.PutUint16(b[4:], HeaderSize)
	binary.LittleEndian.PutUint16(b[6:], h.CreditCharge)
	binary.LittleEndian.PutUint32(b[8:], h.Status)
	binary.LittleEndian.PutUint16(b[12:], uint16(h.Command))
	binary.LittleEndian.PutUint16(b[14:], h.Credits)
	binary.LittleEndian.PutUint32(b[16:], h.Flags)
	binary.LittleEndian.PutUint32(b[20:], h.NextCommand)
	binary.LittleEndian.PutUint64(b[24:], h.MessageID)
	if h.Flags&FlagAsyncCommand != 0 {
		binary.LittleEndian.PutUint64(b[32:], h.AsyncID)
	} else {
		binary.LittleEndian.PutUint32(b[32:], 0) // Reserved
		binary.LittleEndian.PutUint32(b[36:], h.TreeID)
	}
	binary.LittleEndian.PutUint64(b[40:], h.SessionID)
	copy(b[48:64], h.Signature[:])
}

// FileID identifies an open ([MS-SMB2] 2.2.14.1).
type FileID struct {
	Persistent uint64
	Volatile   uint64
}

// FileIDSize is the encoded size of a FileID.
const FileIDSize = 16

// AnyFileID is the all-ones FileID a related compound request uses to mean
// "the FileID of the previous operation".
var AnyFileID = FileID{^uint64(0), ^uint64(0)}

// DecodeFileID reads a FileID from b[:16].
func DecodeFileID(b []byte) FileID {
	return FileID{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])}
}

// Encode writes the FileID into b[:16].
func (f FileID) Encode(b []byte) {
	binary.LittleEndian.PutUint64(b, f.Persistent)
	binary.LittleEndian.PutUint64(b[8:], f.Volatile)
}
