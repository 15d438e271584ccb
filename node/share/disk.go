package share

import (
	"log/slog"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Access masks granted on a writable and a read-only share.
const (
	fullAccess     = 0x001f01ff
	readOnlyAccess = 0x001200a9
)

// Disk is the Backend of one disk share.
type Disk struct {
	resume atomic.Pointer[ResumeKeys] // FSCTL_SRV_REQUEST_RESUME_KEY's keys (resumekey.go)

	// Immutable.
	name     string
	fs       vfs.FS
	readOnly bool
	log      *slog.Logger
	volumeID uint64      // the share's identity: SetVolumeID, else the filesystem's serial number
	mount    string      // the mount the share is on (vfs.FSInfo.Mount)
	table    state.Files // share modes, delete-pending and oplocks of every open
	locks    state.Locks // byte-range locks
	notify   notifier    // CHANGE_NOTIFY watchers
}

// NewDisk returns the backend for a disk share named name over fsys.
func NewDisk(name string, fsys vfs.FS, readOnly bool, log *slog.Logger) *Disk {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Disk{name: name, fs: fsys, readOnly: readOnly, log: log, table: state.NewTable(), locks: state.NewLockTable()}
	if st, err := fsys.StatFS(); err == nil {
		d.volumeID, d.mount = uint64(st.SerialNumber), st.Mount
	}
	return d
}

// SetVolumeID makes id the share's volume identity: the volume half of its
// files' keys (state.FileKey) and the serial number clients see. A
// cluster sets the share's identity from etcd, so that every node names a
// file alike whatever its own mount of the share reports (st_dev and
// f_fsid differ between two clients of one distributed filesystem).
// Call it before serving.
func (d *Disk) SetVolumeID(id uint64) { d.volumeID = id }

// VolumeID is the share's volume identity (SetVolumeID).
func (d *Disk) VolumeID() uint64 { return d.volumeID }

// SetState makes the share use the open and lock state f and l, shared
// with the other shares of the node (and, in a cluster, reached through
// the file's owner node). Call it before serving.
func (d *Disk) SetState(f state.Files, l state.Locks) { d.table, d.locks = f, l }

// MaximalAccess implements server.Backend.
func (d *Disk) MaximalAccess(*server.Session) uint32 {
	if d.readOnly {
		return readOnlyAccess
	}
	return fullAccess
}

// mapGeneric turns generic and MAXIMUM_ALLOWED access bits into specific ones
// ([MS-SMB2] 2.2.13.1.1).
func (d *Disk) mapGeneric(access uint32) uint32 {
	max := d.MaximalAccess(nil)
	if access&smb2.MaximumAllowed != 0 {
		access |= max
	}
	if access&smb2.GenericAll != 0 {
		access |= max
	}
	if access&smb2.GenericRead != 0 {
		access |= 0x00120089
	}
	if access&smb2.GenericWrite != 0 {
		access |= 0x00120116
	}
	if access&smb2.GenericExecute != 0 {
		access |= 0x001200a0
	}
	return access &^ (smb2.MaximumAllowed | smb2.GenericAll | smb2.GenericRead | smb2.GenericWrite | smb2.GenericExecute)
}
