package smb2

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// body is what every request and response type implements.
type body interface {
	Size() int
	Encode(b []byte)
	Decode(msg []byte) error
}

type codecCase struct {
	name    string
	cmd     Command
	in      body
	out     func() body // a fresh zero value to decode into
	request bool
}

// pdu encodes h and c into one message, on a buffer that starts out filled
// with garbage so that an encoder that skips a byte is caught.
func pdu(cmd Command, c body, fill byte) []byte {
	msg := bytes.Repeat([]byte{fill}, HeaderSize+c.Size())
	h := Header{Command: cmd, MessageID: 7, SessionID: 0x1122334455667788, TreeID: 5}
	h.Encode(msg)
	c.Encode(msg[HeaderSize:])
	return msg
}

var (
	fid  = FileID{Persistent: 0x0102030405060708, Volatile: 0x1112131415161718}
	guid = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	key2 = [16]byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF}
)

func preauthCtx() NegotiateContext {
	p := PreauthIntegrity{HashAlgorithms: []uint16{HashSHA512}, Salt: bytes.Repeat([]byte{0x5A}, 32)}
	return NegotiateContext{Type: PreauthIntegrityCapabilities, Data: p.Append(nil)}
}

func cases() []codecCase {
	enc := EncryptionCaps{Ciphers: []uint16{CipherAES128GCM, CipherAES128CCM}}
	sig := SigningCaps{Algorithms: []uint16{SigningAESGMAC}}
	net := Netname{Name: "server"}
	lease := LeaseRequest{Key: key2, State: LeaseRead | LeaseHandle, Flags: LeaseFlagParentLeaseKeySet, ParentKey: guid, Epoch: 3, Version: 2}
	mx := MxAcResponse{MaximalAccess: 0x1F01FF}
	return []codecCase{
		{"negotiate-req-311", CmdNegotiate, &NegotiateRequest{
			SecurityMode: NegotiateSigningEnabled, Capabilities: CapLargeMTU | CapEncryption, ClientGUID: guid,
			Dialects: []uint16{Dialect202, Dialect210, Dialect300, Dialect302, Dialect311},
			Contexts: []NegotiateContext{preauthCtx(), {Type: EncryptionCapabilities, Data: enc.Append(nil)},
				{Type: NetnameNegotiateContextID, Data: net.Append(nil)}, {Type: SigningCapabilities, Data: sig.Append(nil)}},
		}, func() body { return &NegotiateRequest{} }, true},
		{"negotiate-req-30", CmdNegotiate, &NegotiateRequest{
			SecurityMode: NegotiateSigningRequired, ClientGUID: guid, Dialects: []uint16{Dialect202, Dialect300}, ClientStartTime: 12345,
		}, func() body { return &NegotiateRequest{} }, true},
		{"negotiate-resp-311", CmdNegotiate, &NegotiateResponse{
			SecurityMode: NegotiateSigningEnabled, DialectRevision: Dialect311, ServerGUID: guid, Capabilities: CapLargeMTU,
			MaxTransactSize: 1 << 23, MaxReadSize: 1 << 23, MaxWriteSize: 1 << 23, SystemTime: 1, ServerStartTime: 2,
			SecurityBuffer: []byte("\x60\x48\x06\x06+\x06\x01\x05\x05\x02"),
			Contexts:       []NegotiateContext{preauthCtx(), {Type: EncryptionCapabilities, Data: (&EncryptionCaps{Ciphers: []uint16{CipherAES128GCM}}).Append(nil)}},
		}, func() body { return &NegotiateResponse{} }, false},
		{"negotiate-resp-302", CmdNegotiate, &NegotiateResponse{
			DialectRevision: Dialect302, MaxReadSize: 65536, SecurityBuffer: []byte{1, 2, 3},
		}, func() body { return &NegotiateResponse{} }, false},
		{"session-setup-req", CmdSessionSetup, &SessionSetupRequest{
			Flags: SessionFlagBinding, SecurityMode: 1, Capabilities: CapDFS, Channel: 0, PreviousSessionID: 99, SecurityBuffer: []byte("NTLMSSP\x00\x01"),
		}, func() body { return &SessionSetupRequest{} }, true},
		{"session-setup-resp", CmdSessionSetup, &SessionSetupResponse{SessionFlags: SessionFlagEncryptData, SecurityBuffer: []byte{0xA1, 0x07}},
			func() body { return &SessionSetupResponse{} }, false},
		{"session-setup-resp-empty", CmdSessionSetup, &SessionSetupResponse{SessionFlags: SessionFlagIsGuest},
			func() body { return &SessionSetupResponse{} }, false},
		{"logoff-req", CmdLogoff, &LogoffRequest{}, func() body { return &LogoffRequest{} }, true},
		{"logoff-resp", CmdLogoff, &LogoffResponse{}, func() body { return &LogoffResponse{} }, false},
		{"echo-req", CmdEcho, &EchoRequest{}, func() body { return &EchoRequest{} }, true},
		{"echo-resp", CmdEcho, &EchoResponse{}, func() body { return &EchoResponse{} }, false},
		{"cancel-req", CmdCancel, &CancelRequest{}, func() body { return &CancelRequest{} }, true},
		{"tree-connect-req", CmdTreeConnect, &TreeConnectRequest{Path: `\\server\share`},
			func() body { return &TreeConnectRequest{} }, true},
		{"tree-connect-resp", CmdTreeConnect, &TreeConnectResponse{ShareType: ShareTypeDisk, ShareFlags: ShareFlagNoCaching | ShareFlagEncryptData, Capabilities: ShareCapScaleout, MaximalAccess: 0x1F01FF},
			func() body { return &TreeConnectResponse{} }, false},
		{"tree-disconnect-req", CmdTreeDisconnect, &TreeDisconnectRequest{}, func() body { return &TreeDisconnectRequest{} }, true},
		{"tree-disconnect-resp", CmdTreeDisconnect, &TreeDisconnectResponse{}, func() body { return &TreeDisconnectResponse{} }, false},
		{"create-req", CmdCreate, &CreateRequest{
			RequestedOplockLevel: OplockLevelLease, ImpersonationLevel: ImpersonationImpersonation,
			DesiredAccess: GenericRead | Synchronize, FileAttributes: 0x80, ShareAccess: FileShareRead | FileShareWrite,
			CreateDisposition: FileOpenIf, CreateOptions: FileNonDirectoryFile, Name: `dir\fïle.txt`,
			Contexts: []CreateContext{{Name: CreateCtxQueryMaximalAccess}, {Name: CreateCtxRequestLease, Data: lease.Append(nil)},
				{Name: CreateCtxDurableHandleRequestV2, Data: (&DurableRequestV2{Timeout: 1000, CreateGUID: guid}).Append(nil)},
				{Name: CreateCtxQueryOnDiskID}},
		}, func() body { return &CreateRequest{} }, true},
		{"create-req-root", CmdCreate, &CreateRequest{DesiredAccess: FileReadAttributes, CreateDisposition: FileOpen, CreateOptions: FileDirectoryFile},
			func() body { return &CreateRequest{} }, true},
		{"create-resp", CmdCreate, &CreateResponse{
			OplockLevel: OplockLevelLease, CreateAction: FileCreated, CreationTime: 1, LastAccessTime: 2, LastWriteTime: 3, ChangeTime: 4,
			AllocationSize: 4096, EndOfFile: 10, FileAttributes: 0x20, FileID: fid,
			Contexts: []CreateContext{{Name: CreateCtxQueryMaximalAccess, Data: mx.Append(nil)},
				{Name: CreateCtxQueryOnDiskID, Data: (&QFidResponse{DiskFileID: 77, VolumeID: 88}).Append(nil)}},
		}, func() body { return &CreateResponse{} }, false},
		{"create-resp-plain", CmdCreate, &CreateResponse{CreateAction: FileOpened, FileID: fid},
			func() body { return &CreateResponse{} }, false},
		{"close-req", CmdClose, &CloseRequest{Flags: ClosePostQueryAttrib, FileID: fid}, func() body { return &CloseRequest{} }, true},
		{"close-resp", CmdClose, &CloseResponse{Flags: ClosePostQueryAttrib, CreationTime: 1, LastAccessTime: 2, LastWriteTime: 3, ChangeTime: 4, AllocationSize: 5, EndOfFile: 6, FileAttributes: 7},
			func() body { return &CloseResponse{} }, false},
		{"flush-req", CmdFlush, &FlushRequest{FileID: fid}, func() body { return &FlushRequest{} }, true},
		{"flush-resp", CmdFlush, &FlushResponse{}, func() body { return &FlushResponse{} }, false},
		{"read-req", CmdRead, &ReadRequest{Padding: 0x50, Flags: ReadFlagUnbuffered, Length: 65536, Offset: 1 << 40, FileID: fid, MinimumCount: 1, RemainingBytes: 3},
			func() body { return &ReadRequest{} }, true},
		{"read-req-channel", CmdRead, &ReadRequest{Length: 1, FileID: fid, Channel: ChannelRDMAV1, ChannelInfo: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
			func() body { return &ReadRequest{} }, true},
		{"write-req", CmdWrite, &WriteRequest{DataOffset: 0x70, Length: 5, Offset: 100, FileID: fid, Flags: WriteFlagWriteThrough, Data: []byte("hello")},
			func() body { return &WriteRequest{} }, true},
		{"write-resp", CmdWrite, &WriteResponse{Count: 5}, func() body { return &WriteResponse{} }, false},
		{"lock-req", CmdLock, &LockRequest{LockSequenceNumber: 5, LockSequenceIndex: 33, FileID: fid, Locks: []LockElement{
			{Offset: 0, Length: 10, Flags: LockFlagExclusive | LockFlagFailImmediately}, {Offset: 100, Length: 1, Flags: LockFlagUnlock}}},
			func() body { return &LockRequest{} }, true},
		{"lock-resp", CmdLock, &LockResponse{}, func() body { return &LockResponse{} }, false},
		{"ioctl-req", CmdIoctl, &IoctlRequest{CtlCode: FsctlValidateNegotiateInfo, FileID: AnyFileID, Input: []byte{1, 2, 3}, MaxOutputResponse: 24, Flags: IoctlIsFsctl},
			func() body { return &IoctlRequest{} }, true},
		{"ioctl-resp", CmdIoctl, &IoctlResponse{CtlCode: FsctlPipeTransceive, FileID: fid, Output: []byte("reply"), Flags: 0},
			func() body { return &IoctlResponse{} }, false},
		{"ioctl-resp-in-out", CmdIoctl, &IoctlResponse{CtlCode: FsctlSrvCopyChunk, FileID: fid, Input: []byte{9}, Output: []byte{1, 2, 3, 4}},
			func() body { return &IoctlResponse{} }, false},
		{"query-directory-req", CmdQueryDirectory, &QueryDirectoryRequest{FileInformationClass: 37, Flags: RestartScans, FileID: fid, OutputBufferLength: 65536, FileName: "*"},
			func() body { return &QueryDirectoryRequest{} }, true},
		{"query-directory-resp", CmdQueryDirectory, &QueryDirectoryResponse{Buffer: []byte("entries")},
			func() body { return &QueryDirectoryResponse{} }, false},
		{"change-notify-req", CmdChangeNotify, &ChangeNotifyRequest{Flags: WatchTree, OutputBufferLength: 4096, FileID: fid, CompletionFilter: FileNotifyChangeFileName | FileNotifyChangeDirName},
			func() body { return &ChangeNotifyRequest{} }, true},
		{"change-notify-resp", CmdChangeNotify, &ChangeNotifyResponse{Buffer: []byte{0, 0, 0, 0, 1, 0, 0, 0}},
			func() body { return &ChangeNotifyResponse{} }, false},
		{"query-info-req", CmdQueryInfo, &QueryInfoRequest{InfoType: InfoSecurity, OutputBufferLength: 4096, InputBuffer: []byte{1, 2}, AdditionalInformation: OwnerSecurityInformation | DACLSecurityInformation, FileID: fid},
			func() body { return &QueryInfoRequest{} }, true},
		{"query-info-resp", CmdQueryInfo, &QueryInfoResponse{Buffer: []byte("info")}, func() body { return &QueryInfoResponse{} }, false},
		{"query-info-resp-empty", CmdQueryInfo, &QueryInfoResponse{}, func() body { return &QueryInfoResponse{} }, false},
		{"set-info-req", CmdSetInfo, &SetInfoRequest{InfoType: InfoFile, FileInfoClass: 4, Buffer: bytes.Repeat([]byte{7}, 40), FileID: fid},
			func() body { return &SetInfoRequest{} }, true},
		{"set-info-resp", CmdSetInfo, &SetInfoResponse{}, func() body { return &SetInfoResponse{} }, false},
		{"oplock-break-ack", CmdOplockBreak, &OplockBreakAck{OplockLevel: OplockLevelII, FileID: fid},
			func() body { return &OplockBreakAck{} }, true},
		{"oplock-break-notification", CmdOplockBreak, &OplockBreakNotification{OplockLevel: OplockLevelNone, FileID: fid},
			func() body { return &OplockBreakNotification{} }, false},
		{"lease-break-ack", CmdOplockBreak, &LeaseBreakAck{LeaseKey: key2, LeaseState: LeaseRead},
			func() body { return &LeaseBreakAck{} }, true},
		{"lease-break-notification", CmdOplockBreak, &LeaseBreakNotification{NewEpoch: 4, Flags: LeaseBreakFlagAckRequired, LeaseKey: key2, CurrentLeaseState: LeaseRead | LeaseWrite, NewLeaseState: LeaseRead},
			func() body { return &LeaseBreakNotification{} }, false},
		{"error-resp", CmdCreate, &ErrorResponse{}, func() body { return &ErrorResponse{} }, false},
		{"error-resp-data", CmdCreate, &ErrorResponse{ErrorContextCount: 1, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
			func() body { return &ErrorResponse{} }, false},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			msg := pdu(c.cmd, c.in, 0xEE)
			if !bytes.Equal(msg, pdu(c.cmd, c.in, 0x00)) {
				t.Fatalf("encoding depends on the buffer's previous contents")
			}
			if got := int(le.Uint16(msg[HeaderSize:])); got&^1 > c.in.Size() {
				t.Fatalf("Size %d smaller than StructureSize %d", c.in.Size(), got)
			}
			out := c.out()
			if err := out.Decode(msg); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(out, c.in) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", out, c.in)
			}
			// Re-encoding the decoded value gives the same bytes.
			if !bytes.Equal(pdu(c.cmd, out, 0), msg) {
				t.Fatalf("re-encoding differs")
			}
		})
	}
}

func TestTruncatedRequestsFail(t *testing.T) {
	for _, c := range cases() {
		if !c.request {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			msg := pdu(c.cmd, c.in, 0)
			for n := 0; n < len(msg); n++ {
				short := bytes.Clone(msg[:n]) // exact capacity: reads past n would fault in the race detector's eyes too
				if err := c.out().Decode(short); err == nil {
					t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(msg))
				}
			}
		})
	}
}

func TestBadStructureSize(t *testing.T) {
	for _, c := range cases() {
		msg := pdu(c.cmd, c.in, 0)
		msg[HeaderSize]++
		if err := c.out().Decode(msg); !errors.Is(err, ErrBadStructureSize) {
			t.Errorf("%s: StructureSize+1 gave %v", c.name, err)
		}
	}
}
