package server

import (
	"encoding/binary"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// command is one row of the command table: what must be resolved and
// checked before the handler runs, and the handler. The checks run in
// this order (run, prepare): session, tree, the body's StructureSize,
// arrival order, the open, the lengths and the credit charge.
type command struct {
	needSession bool // a valid session bound to this connection, signing/encryption checked
	needTree    bool // a tree connect of that session
	// sessionless, when set, admits the requests it accepts without a
	// session or tree (SessionId 0): IOCTLs about the connection itself.
	sessionless func(msg []byte) bool
	// size is the request's StructureSize: the table checks it and that
	// the fixed part of the body is there; 0 leaves both to the handler.
	size uint16
	// fileID is the offset in the body of the FileId of the open the
	// request names, resolved into Request.Open before the handler runs
	// (in a related compound the all-ones FileId is the previous
	// operation's open, [MS-SMB2] 3.3.5.2.7.2); 0: it names no open.
	fileID int
	// openless, when set, exempts the requests it accepts from that: they
	// may carry any FileId (IOCTLs about the connection, lease break
	// acknowledgments) and the handler sees no Open.
	openless func(body []byte) bool
	// limit checks the lengths the request carries against the limits
	// negotiated and returns the bytes its credit charge must cover
	// ([MS-SMB2] 3.3.5.2.5); checked after the open is resolved.
	limit func(c *conn, body []byte) (uint32, error)
	// awaitEarlier: the request waits until those that arrived before it
	// have settled before it resolves its open; settleLate: it settles
	// when it goes async or answers, not when it holds its open (order.go).
	awaitEarlier, settleLate bool
	serve                    func(c *conn, r *Request) (Response, error)
}

// commands is the command table ([MS-SMB2] 3.3.5.2). NEGOTIATE is served
// inline by the read loop; CANCEL never reaches the table. The FileId
// offsets are those of [MS-SMB2] 2.2.
var commands [smb2.NumCommands]command

func init() {
	const s, t = true, true // needSession, needTree
	commands = [smb2.NumCommands]command{
		smb2.CmdNegotiate:      {serve: (*conn).serveNegotiate},
		smb2.CmdSessionSetup:   {serve: (*conn).serveAdmittedSessionSetup},
		smb2.CmdLogoff:         {needSession: s, serve: (*conn).serveLogoff},
		smb2.CmdTreeConnect:    {needSession: s, serve: (*conn).serveTreeConnect},
		smb2.CmdTreeDisconnect: {needSession: s, needTree: t, serve: (*conn).serveTreeDisconnect},
		smb2.CmdCreate:         {needSession: s, needTree: t, serve: (*conn).serveCreate},
		smb2.CmdClose:          {needSession: s, needTree: t, size: 24, fileID: 8, awaitEarlier: true, serve: (*conn).serveClose},
		smb2.CmdFlush:          {needSession: s, needTree: t, size: 24, fileID: 8, serve: (*conn).serveFlush},
		smb2.CmdRead:           {needSession: s, needTree: t, size: 49, fileID: 16, limit: readLimit, serve: (*conn).serveRead},
		smb2.CmdWrite:          {needSession: s, needTree: t, size: 49, fileID: 16, limit: writeLimit, serve: (*conn).serveWrite},
		smb2.CmdLock:           {needSession: s, needTree: t, size: 48, fileID: 8, serve: (*conn).serveLock},
		smb2.CmdIoctl:          {needSession: s, needTree: t, size: 57, fileID: 8, openless: openlessIoctl, sessionless: sessionlessIoctl, serve: (*conn).serveIoctl},
		smb2.CmdEcho:           {serve: (*conn).serveEcho},
		smb2.CmdQueryDirectory: {needSession: s, needTree: t, size: 33, fileID: 8, serve: (*conn).serveQueryDirectory},
		smb2.CmdChangeNotify:   {needSession: s, needTree: t, size: 32, fileID: 8, limit: notifyLimit, awaitEarlier: true, settleLate: true, serve: (*conn).serveChangeNotify},
		smb2.CmdQueryInfo:      {needSession: s, needTree: t, size: 41, fileID: 24, serve: (*conn).serveQueryInfo},
		smb2.CmdSetInfo:        {needSession: s, needTree: t, size: 33, fileID: 16, serve: (*conn).serveSetInfo},
		smb2.CmdOplockBreak:    {needSession: s, needTree: t, fileID: 8, openless: openlessBreakAck, serve: (*conn).serveOplockBreak},
	}
}

// prepare makes the checks of cmd's row that read the request's body: its
// StructureSize, the open it names and its lengths and credit charge.
func (c *conn) prepare(r *Request, cmd *command) error {
	body := r.Msg[smb2.HeaderSize:]
	if cmd.size != 0 && (len(body) < int(cmd.size&^1) || binary.LittleEndian.Uint16(body) != cmd.size) {
		return smb2.StatusInvalidParameter
	}
	if cmd.awaitEarlier {
		c.awaitEarlier(r.Ctx, r.Header.MessageID) // order.go
	}
	r.settleLate = cmd.settleLate
	if cmd.fileID != 0 && (cmd.openless == nil || !cmd.openless(body)) {
		if len(body) < cmd.fileID+16 {
			return smb2.StatusInvalidParameter
		}
		if err := r.resolveOpen(smb2.DecodeFileID(body[cmd.fileID:])); err != nil {
			return err
		}
	}
	if cmd.limit == nil {
		return nil
	}
	n, err := cmd.limit(c, body)
	if err != nil {
		return err
	}
	return c.checkCharge(r, n)
}

// readLimit checks a READ's Length and Offset ([MS-SMB2] 3.3.5.12).
func readLimit(c *conn, body []byte) (uint32, error) {
	n := binary.LittleEndian.Uint32(body[4:])
	off := binary.LittleEndian.Uint64(body[8:])
	if n > c.srv.cfg.MaxTransact || c.dialect == smb2.Dialect202 && n > 65536 {
		return 0, smb2.StatusInvalidParameter
	}
	if int64(off) < 0 || int64(off+uint64(n)) < 0 {
		return 0, smb2.StatusInvalidParameter // beyond the largest file offset
	}
	return n, nil
}

// writeLimit checks a WRITE's Length and Offset ([MS-SMB2] 3.3.5.13).
func writeLimit(c *conn, body []byte) (uint32, error) {
	n := binary.LittleEndian.Uint32(body[4:])
	if n > c.srv.cfg.MaxTransact {
		return 0, smb2.StatusInvalidParameter
	}
	return n, checkWriteRange(binary.LittleEndian.Uint64(body[8:]), n)
}

// notifyLimit checks a CHANGE_NOTIFY's OutputBufferLength against
// MaxTransactSize ([MS-SMB2] 3.3.5.19); it carries no payload to charge for.
func notifyLimit(c *conn, body []byte) (uint32, error) {
	n := binary.LittleEndian.Uint32(body[4:])
	if n > c.srv.cfg.MaxTransact || c.dialect == smb2.Dialect202 && n > 65536 {
		return 0, smb2.StatusInvalidParameter
	}
	return 0, nil
}

// openlessBreakAck tells a lease break acknowledgment, which names a
// lease and no open, from an oplock break acknowledgment (StructureSize
// 24); the handler rejects any other StructureSize.
func openlessBreakAck(body []byte) bool {
	return len(body) < 2 || binary.LittleEndian.Uint16(body) != 24
}

// serveEcho handles SMB2 ECHO ([MS-SMB2] 3.3.5.17).
func (c *conn) serveEcho(r *Request) (Response, error) {
	if err := (&smb2.EchoRequest{}).Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	return &smb2.EchoResponse{}, nil
}
