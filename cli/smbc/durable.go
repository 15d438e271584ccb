package smbc

import (
	"fmt"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// Durable handles ([MS-SMB2] 3.2.4.3.5, 3.2.4.4): an open made with a
// DH2Q context outlives its connection; the client reconnects it on a new
// connection — through any node of a cluster — with a DH2C context
// naming its FileId and CreateGuid, and its lease key.

// Durable is what a durable open needs to be reconnected.
type Durable struct {
	Name       string
	FileID     smb2.FileID
	CreateGUID [16]byte
	LeaseKey   [16]byte
	Lease      uint32        // the lease state granted
	Timeout    time.Duration // as granted
	Persistent bool          // granted persistent ([MS-SMB2] 2.2.14.2.12)
}

// DurableOptions asks for a durable v2 open.
type DurableOptions struct {
	CreateGUID  [16]byte
	LeaseKey    [16]byte
	LeaseState  uint32 // smb2.LeaseRead|LeaseHandle|LeaseWrite …
	Timeout     time.Duration
	Persistent  bool   // SMB2_DHANDLE_FLAG_PERSISTENT
	ShareAccess uint32 // FILE_SHARE_* bits
}

// OpenDurable opens name for reading and writing, creating it if needed,
// with a version 2 lease and a DH2Q context (dialect 3.x).
func (c *Conn) OpenDurable(name string, o DurableOptions) (*File, Durable, error) {
	if c.dialect < smb2.Dialect300 {
		return nil, Durable{}, fmt.Errorf("open %s: durable v2 handles need dialect 3.x", name)
	}
	dq := smb2.DurableRequestV2{Timeout: uint32(o.Timeout / time.Millisecond), CreateGUID: o.CreateGUID}
	if o.Persistent {
		dq.Flags = smb2.DurableHandleFlagPersistent
	}
	req := c.leaseCreate(name, o.LeaseKey, o.LeaseState, o.ShareAccess)
	req.CreateDisposition = fileOpenIf
	req.Contexts = append(req.Contexts, smb2.CreateContext{Name: smb2.CreateCtxDurableHandleRequestV2, Data: dq.Append(nil)})
	resp, err := c.createWith(&req)
	if err != nil {
		return nil, Durable{}, err
	}
	d := Durable{Name: name, FileID: resp.FileID, CreateGUID: o.CreateGUID, LeaseKey: o.LeaseKey}
	if err := d.granted(resp); err != nil {
		return nil, d, err
	}
	return &File{c: c, id: resp.FileID}, d, nil
}

// Reconnect reconnects durable open d on this connection (DH2C); the
// returned File has the FileId the server answers with.
func (c *Conn) Reconnect(d Durable) (*File, error) {
	req := c.leaseCreate(d.Name, d.LeaseKey, d.Lease, shareAll)
	req.CreateDisposition = fileOpen
	rc := smb2.DurableReconnectV2{FileID: d.FileID, CreateGUID: d.CreateGUID}
	if d.Persistent {
		rc.Flags = smb2.DurableHandleFlagPersistent
	}
	req.Contexts = append(req.Contexts, smb2.CreateContext{Name: smb2.CreateCtxDurableHandleReconnectV2, Data: rc.Append(nil)})
	resp, err := c.createWith(&req)
	if err != nil {
		return nil, err
	}
	return &File{c: c, id: resp.FileID}, nil
}

// leaseCreate is a CREATE for reading and writing with a v2 lease.
func (c *Conn) leaseCreate(name string, key [16]byte, state, share uint32) smb2.CreateRequest {
	lr := smb2.LeaseRequest{Key: key, State: state, Version: 2}
	return smb2.CreateRequest{RequestedOplockLevel: oplockLease, ImpersonationLevel: impersonation,
		DesiredAccess: accessReadWrite, FileAttributes: attrNormal, ShareAccess: share,
		CreateOptions: optNonDirectory, Name: name,
		Contexts: []smb2.CreateContext{{Name: smb2.CreateCtxRequestLease, Data: lr.Append(nil)}}}
}

// createWith sends a CREATE and decodes its response.
func (c *Conn) createWith(req *smb2.CreateRequest) (*smb2.CreateResponse, error) {
	cl := c.newCall(smb2.CmdCreate, req)
	defer cl.release()
	if err := c.do(cl, c.creditCharge(0)); err != nil {
		return nil, fmt.Errorf("open %s: %w", req.Name, err)
	}
	var resp smb2.CreateResponse
	if err := resp.Decode(cl.resp); err != nil {
		return nil, fmt.Errorf("%w: CREATE: %v", ErrProtocol, err)
	}
	return &resp, nil
}

// granted reads the lease and DH2Q answers of a CREATE response.
func (d *Durable) granted(resp *smb2.CreateResponse) error {
	if data, ok := smb2.FindCreateContext(resp.Contexts, smb2.CreateCtxRequestLease); ok && resp.OplockLevel == oplockLease {
		var l smb2.LeaseResponse
		if err := l.Decode(data); err != nil {
			return fmt.Errorf("%w: lease context: %v", ErrProtocol, err)
		}
		d.Lease = l.State
	}
	data, ok := smb2.FindCreateContext(resp.Contexts, smb2.CreateCtxDurableHandleRequestV2)
	if !ok {
		return fmt.Errorf("open %s: the server granted no durable handle", d.Name)
	}
	var dr smb2.DurableResponseV2
	if err := dr.Decode(data); err != nil {
		return fmt.Errorf("%w: DH2Q context: %v", ErrProtocol, err)
	}
	d.Timeout = time.Duration(dr.Timeout) * time.Millisecond
	d.Persistent = dr.Flags&smb2.DurableHandleFlagPersistent != 0
	return nil
}

// ID returns the file's FileId.
func (f *File) ID() smb2.FileID { return f.id }

// Lock takes a byte-range lock on [off, off+n) ([MS-SMB2] 2.2.26), failing
// at once on a conflict (STATUS_LOCK_NOT_GRANTED).
func (f *File) Lock(off, n uint64, exclusive bool) error {
	flags := uint32(smb2.LockFlagShared)
	if exclusive {
		flags = smb2.LockFlagExclusive
	}
	cl := f.c.newCall(smb2.CmdLock, &smb2.LockRequest{FileID: f.id,
		Locks: []smb2.LockElement{{Offset: off, Length: n, Flags: flags | smb2.LockFlagFailImmediately}}})
	defer cl.release()
	return f.c.do(cl, f.c.creditCharge(0))
}

// Unlock releases the byte-range lock on [off, off+n) that Lock took.
func (f *File) Unlock(off, n uint64) error {
	cl := f.c.newCall(smb2.CmdLock, &smb2.LockRequest{FileID: f.id,
		Locks: []smb2.LockElement{{Offset: off, Length: n, Flags: smb2.LockFlagUnlock}}})
	defer cl.release()
	return f.c.do(cl, f.c.creditCharge(0))
}

// ShareCapabilities returns the Capabilities of the TREE_CONNECT response
// (SMB2_SHARE_CAP_CONTINUOUS_AVAILABILITY …).
func (c *Conn) ShareCapabilities() uint32 { return c.shareCaps }
