package share

import (
	"errors"
	"syscall"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Files opened by name for another node: a channel handed over to this
// node's session from the node its client is connected to moves the
// bytes of its large READs and WRITEs there, through that node's own
// share of the same name (server/remotefile.go). Each node has its own
// mount of the share's storage, so a file is named by its vfs name under
// the share's root, and recognised by its FileID.

// PeerFile implements server.PeerFiler: a regular file's vfs name (as of
// now: a rename changes it) and FileID; not a directory or a named stream.
func (o *open) PeerFile() (server.PeerFile, bool) {
	o.mu.Lock()
	name, stream := o.name, o.stream
	o.mu.Unlock()
	if o.isDir || stream != "" || name == "" {
		return server.PeerFile{}, false
	}
	fi, err := o.f.Stat()
	if err != nil || fi.IsDir {
		return server.PeerFile{}, false
	}
	return server.PeerFile{Path: name, ID: fi.FileID, Size: fi.Size, Mount: o.d.mount}, true
}

// Mount implements server.PeerOpener.
func (d *Disk) Mount() string { return d.mount }

// OpenPeer implements server.PeerOpener: the existing regular file path,
// opened through the share's vfs, and its FileID.
func (d *Disk) OpenPeer(path string, write bool) (server.PeerIO, uint64, error) {
	if write && d.readOnly {
		return nil, 0, syscall.EROFS
	}
	f, _, err := d.fs.Open(path, vfs.OpenOptions{Read: !write, Write: write, Create: vfs.OpenExisting, Kind: vfs.RegularOnly})
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir {
		err = errors.New("share: not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.FileID, nil
}
