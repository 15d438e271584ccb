package smbc

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// More of the CREATE parameters this client uses ([MS-SMB2] 2.2.13).
const (
	accessRead    = 0x00120089 // FILE_READ_DATA | FILE_READ_EA | FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE
	optDirectory  = 0x00000001 // FILE_DIRECTORY_FILE
	oplockLease   = 0xFF       // SMB2_OPLOCK_LEVEL_LEASE
	breakBacklog  = 64         // notifications kept until Breaks' reader takes them
	leaseBreakLen = 44         // StructureSize of a Lease Break Notification
)

// OpenRead opens an existing file for reading, sharing read, write and
// delete, with no oplock or lease: the open the open/close benchmark
// measures. The File is a value: an open and a close allocate nothing.
func (c *Conn) OpenRead(name string) (File, error) {
	req := smb2.CreateRequest{ImpersonationLevel: impersonation, DesiredAccess: accessRead,
		FileAttributes: attrNormal, ShareAccess: shareAll, CreateDisposition: fileOpen,
		CreateOptions: optNonDirectory, Name: name}
	cl, b := newRawCall(smb2.CmdCreate, req.Size())
	req.Encode(b) // not through newCall's interface: req stays on the stack
	defer cl.release()
	if err := c.do(cl, c.creditCharge(0)); err != nil {
		return File{}, fmt.Errorf("open %s: %w", name, err)
	}
	// The FileId is all this open needs: no contexts were asked for.
	if len(cl.resp) < smb2.HeaderSize+80 || binary.LittleEndian.Uint16(cl.resp[smb2.HeaderSize:]) != 89 {
		return File{}, fmt.Errorf("%w: CREATE response", ErrProtocol)
	}
	return File{c: c, id: smb2.DecodeFileID(cl.resp[smb2.HeaderSize+64:])}, nil
}

// Mkdir creates directory name (share-relative) if it does not exist.
func (c *Conn) Mkdir(name string) error {
	resp, err := c.create(name, accessReadWrite, fileOpenIf, optDirectory)
	if err != nil {
		return err
	}
	return c.closeFile(resp.FileID)
}

// RemoveDir deletes the empty directory name.
func (c *Conn) RemoveDir(name string) error {
	resp, err := c.create(name, accessDelete, fileOpen, optDirectory|optDeleteOnClose)
	if err != nil {
		return err
	}
	return c.closeFile(resp.FileID)
}

// OpenLease opens name for reading and writing, creating it if needed,
// sharing read, write and delete, and asks for a lease with the given key
// and state (smb2.LeaseRead|LeaseHandle|LeaseWrite …): a version 2 lease
// context on dialect 3.x, version 1 on 2.1 ([MS-SMB2] 2.2.13.2.8, .10). It
// returns the lease state granted (0: none).
func (c *Conn) OpenLease(name string, key [16]byte, state uint32) (*File, uint32, error) {
	if c.dialect < smb2.Dialect210 {
		return nil, 0, fmt.Errorf("open %s: leases need dialect 2.1 or later", name)
	}
	lr := smb2.LeaseRequest{Key: key, State: state, Version: 1}
	if c.dialect >= smb2.Dialect300 {
		lr.Version = 2
	}
	req := smb2.CreateRequest{RequestedOplockLevel: oplockLease, ImpersonationLevel: impersonation,
		DesiredAccess: accessReadWrite, FileAttributes: attrNormal, ShareAccess: shareAll,
		CreateDisposition: fileOpenIf, CreateOptions: optNonDirectory, Name: name,
		Contexts: []smb2.CreateContext{{Name: smb2.CreateCtxRequestLease, Data: lr.Append(nil)}}}
	cl := c.newCall(smb2.CmdCreate, &req)
	defer cl.release()
	if err := c.do(cl, c.creditCharge(0)); err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", name, err)
	}
	var resp smb2.CreateResponse
	if err := resp.Decode(cl.resp); err != nil {
		return nil, 0, fmt.Errorf("%w: CREATE: %v", ErrProtocol, err)
	}
	f := &File{c: c, id: resp.FileID}
	data, ok := smb2.FindCreateContext(resp.Contexts, smb2.CreateCtxRequestLease)
	if resp.OplockLevel != oplockLease || !ok {
		return f, 0, nil
	}
	var granted smb2.LeaseResponse
	if err := granted.Decode(data); err != nil {
		return f, 0, fmt.Errorf("%w: lease context: %v", ErrProtocol, err)
	}
	return f, granted.State, nil
}

// Break is an oplock or lease break notification the server sent
// ([MS-SMB2] 2.2.23), stamped with when the receiver read it.
type Break struct {
	At          time.Time
	Lease       bool // a lease break; else an oplock break
	AckRequired bool // lease breaks: SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED
	Key         [16]byte
	Current     uint32 // lease state before the break
	New         uint32 // lease state to break to
	FileID      smb2.FileID
	OplockLevel uint8 // oplock breaks: the level to break to
}

// Breaks returns the channel break notifications arrive on. Up to 64 are
// kept for a reader that lags; later ones are dropped.
func (c *Conn) Breaks() <-chan Break { return c.breaks }

// AckLeaseBreak acknowledges a lease break with the state the client keeps
// ([MS-SMB2] 2.2.24.2).
func (c *Conn) AckLeaseBreak(key [16]byte, state uint32) error {
	cl := c.newCall(smb2.CmdOplockBreak, &smb2.LeaseBreakAck{LeaseKey: key, LeaseState: state})
	defer cl.release()
	return c.do(cl, c.creditCharge(0))
}

// notify delivers a break notification, pdu being the whole message.
func (c *Conn) notify(pdu []byte) error {
	if len(pdu) < smb2.HeaderSize+2 {
		return fmt.Errorf("%w: %d-byte break notification", ErrProtocol, len(pdu))
	}
	b := Break{At: time.Now()}
	switch body := pdu[smb2.HeaderSize:]; binary.LittleEndian.Uint16(body) {
	case leaseBreakLen:
		var n smb2.LeaseBreakNotification
		if err := n.Decode(pdu); err != nil {
			return fmt.Errorf("%w: lease break notification: %v", ErrProtocol, err)
		}
		b.Lease, b.AckRequired = true, n.Flags&smb2.LeaseBreakFlagAckRequired != 0
		b.Key, b.Current, b.New = n.LeaseKey, n.CurrentLeaseState, n.NewLeaseState
	default:
		var n smb2.OplockBreakNotification
		if err := n.Decode(pdu); err != nil {
			return fmt.Errorf("%w: oplock break notification: %v", ErrProtocol, err)
		}
		b.FileID, b.OplockLevel = n.FileID, n.OplockLevel
	}
	select {
	case c.breaks <- b:
	default:
	}
	return nil
}
