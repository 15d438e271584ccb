package server

import (
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestCommandTableFileIDs: for every command that names an open, the
// table's StructureSize and FileId offset are where the smb2 codec puts
// them, so that the open the table resolves is the one the handler's
// decoded request names.
func TestCommandTableFileIDs(t *testing.T) {
	fid := smb2.FileID{Persistent: 0x1122334455667788, Volatile: 0x99aabbccddeeff00}
	type encoder interface {
		Size() int
		Encode([]byte)
	}
	reqs := map[smb2.Command]encoder{
		smb2.CmdClose:          &smb2.CloseRequest{FileID: fid},
		smb2.CmdFlush:          &smb2.FlushRequest{FileID: fid},
		smb2.CmdRead:           &smb2.ReadRequest{FileID: fid},
		smb2.CmdWrite:          &smb2.WriteRequest{FileID: fid, Data: []byte("x")},
		smb2.CmdLock:           &smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{}}},
		smb2.CmdIoctl:          &smb2.IoctlRequest{FileID: fid, Flags: smb2.IoctlIsFsctl},
		smb2.CmdQueryDirectory: &smb2.QueryDirectoryRequest{FileID: fid, FileName: "*"},
		smb2.CmdChangeNotify:   &smb2.ChangeNotifyRequest{FileID: fid},
		smb2.CmdQueryInfo:      &smb2.QueryInfoRequest{FileID: fid},
		smb2.CmdSetInfo:        &smb2.SetInfoRequest{FileID: fid, Buffer: []byte("x")},
		smb2.CmdOplockBreak:    &smb2.OplockBreakAck{FileID: fid},
	}
	for cmd := range commands {
		row := &commands[cmd]
		e, ok := reqs[smb2.Command(cmd)]
		if !ok {
			if row.fileID != 0 {
				t.Errorf("%s: the table resolves a FileId the test does not know", smb2.Command(cmd))
			}
			continue
		}
		body := make([]byte, e.Size())
		e.Encode(body)
		if row.fileID == 0 {
			t.Errorf("%s: the table resolves no open", smb2.Command(cmd))
			continue
		}
		if row.size != 0 && binary.LittleEndian.Uint16(body) != row.size {
			t.Errorf("%s: table StructureSize %d, codec %d", smb2.Command(cmd), row.size, binary.LittleEndian.Uint16(body))
		}
		if row.openless != nil && row.openless(body) {
			t.Errorf("%s: a request naming a file passes as openless", smb2.Command(cmd))
		}
		if got := smb2.DecodeFileID(body[row.fileID:]); got != fid {
			t.Errorf("%s: FileId at offset %d is %+v, want %+v", smb2.Command(cmd), row.fileID, got, fid)
		}
	}
}
