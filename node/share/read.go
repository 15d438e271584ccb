package share

import (
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// ReadRange makes the checks of an SMB2 READ ([MS-SMB2] 3.3.5.12): the
// open's access and the byte-range locks of the range. The engine reads
// the range it returns (server.FileReader).
func (o *open) ReadRange(r *server.Request, req *smb2.ReadRequest) (server.FileRange, error) {
	if o.isDir {
		return server.FileRange{}, smb2.StatusInvalidDeviceRequest
	}
	if err := o.need(smb2.FileReadData | smb2.FileExecute); err != nil {
		return server.FileRange{}, err
	}
	if req.Length == 0 {
		if req.MinimumCount > 0 {
			return server.FileRange{}, smb2.StatusEndOfFile
		}
		return server.FileRange{}, nil
	}
	if req.MinimumCount > req.Length {
		return server.FileRange{}, smb2.StatusEndOfFile
	}
	if err := o.checkLocks(req.Offset, uint64(req.Length), false); err != nil {
		return server.FileRange{}, err
	}
	return server.FileRange{File: o.f, Off: int64(req.Offset), N: int(req.Length), Min: req.MinimumCount}, nil
}

// ReadDone records the position after a READ answered up to end.
func (o *open) ReadDone(end int64) { o.setPosition(end) }
