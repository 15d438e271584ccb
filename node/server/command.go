package server

import "github.com/smbcluster/smbcluster/node/smb2"

// command is one row of the command table: what must be resolved before the
// handler runs, and the handler.
type command struct {
	needSession bool // a valid session bound to this connection, signing/encryption checked
	needTree    bool // a tree connect of that session
	// sessionless, when set, admits the requests it accepts without a
	// session or tree (SessionId 0): IOCTLs about the connection itself.
	sessionless func(msg []byte) bool
	serve       func(c *conn, r *Request) (Response, error)
}

// commands is the command table ([MS-SMB2] 3.3.5.2). NEGOTIATE is served
// inline by the read loop; CANCEL never reaches the table.
var commands [smb2.NumCommands]command

func init() {
	commands = [smb2.NumCommands]command{
		smb2.CmdNegotiate:      {serve: (*conn).serveNegotiate},
		smb2.CmdSessionSetup:   {serve: (*conn).serveAdmittedSessionSetup},
		smb2.CmdLogoff:         {needSession: true, serve: (*conn).serveLogoff},
		smb2.CmdTreeConnect:    {needSession: true, serve: (*conn).serveTreeConnect},
		smb2.CmdTreeDisconnect: {needSession: true, needTree: true, serve: (*conn).serveTreeDisconnect},
		smb2.CmdCreate:         {needSession: true, needTree: true, serve: (*conn).serveCreate},
		smb2.CmdClose:          {needSession: true, needTree: true, serve: (*conn).serveClose},
		smb2.CmdFlush:          {needSession: true, needTree: true, serve: (*conn).serveFlush},
		smb2.CmdRead:           {needSession: true, needTree: true, serve: (*conn).serveRead},
		smb2.CmdWrite:          {needSession: true, needTree: true, serve: (*conn).serveWrite},
		smb2.CmdLock:           {needSession: true, needTree: true, serve: (*conn).serveLock},
		smb2.CmdIoctl:          {needSession: true, needTree: true, sessionless: sessionlessIoctl, serve: (*conn).serveIoctl},
		smb2.CmdEcho:           {serve: (*conn).serveEcho},
		smb2.CmdQueryDirectory: {needSession: true, needTree: true, serve: (*conn).serveQueryDirectory},
		smb2.CmdChangeNotify:   {needSession: true, needTree: true, serve: (*conn).serveChangeNotify},
		smb2.CmdQueryInfo:      {needSession: true, needTree: true, serve: (*conn).serveQueryInfo},
		smb2.CmdSetInfo:        {needSession: true, needTree: true, serve: (*conn).serveSetInfo},
		smb2.CmdOplockBreak:    {needSession: true, needTree: true, serve: (*conn).serveOplockBreak},
	}
}

// serveEcho handles SMB2 ECHO ([MS-SMB2] 3.3.5.17).
func (c *conn) serveEcho(r *Request) (Response, error) {
	if err := (&smb2.EchoRequest{}).Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	return &smb2.EchoResponse{}, nil
}
