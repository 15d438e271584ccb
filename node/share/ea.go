package share

import (
	"errors"
	"strings"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Extended attributes ([MS-FSCC] 2.4.15, [MS-FSA] 2.1.5.11.7 and
// 2.1.5.15.5) are kept by backends that implement vfs.EAFile. Names are
// case-insensitive: they are stored and reported upper-cased, as NTFS
// does. The FILE_NEED_EA flag is not kept.

// eaFile returns the open's EA backend, or nil.
func (o *open) eaFile() vfs.EAFile {
	ef, _ := o.f.(vfs.EAFile)
	return ef
}

// eaList returns the open's extended attributes in wire form.
func (o *open) eaList() (fscc.FullEaInformation, error) {
	ef := o.eaFile()
	if ef == nil {
		return nil, nil
	}
	eas, err := ef.EAs()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(fscc.FullEaInformation, 0, len(eas))
	for _, e := range eas {
		out = append(out, fscc.EA{Name: e.Name, Value: e.Value})
	}
	return out, nil
}

// eaSize is FILE_EA_INFORMATION's EaSize: the size of the EAs as a
// FILE_FULL_EA_INFORMATION list, 0 without any.
func (o *open) eaSize() uint32 {
	l, err := o.eaList()
	if err != nil || len(l) == 0 {
		return 0
	}
	return uint32(l.Size())
}

// queryEAs answers FileFullEaInformation: STATUS_NO_EAS_ON_FILE without
// any; whole entries that fit, with STATUS_BUFFER_OVERFLOW when some do
// not, and STATUS_BUFFER_TOO_SMALL when not even the first fits.
func (o *open) queryEAs(max uint32) (server.Response, error) {
	l, err := o.eaList()
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, smb2.StatusNoEasOnFile
	}
	n := len(l)
	for n > 0 && uint64(l[:n].Size()) > uint64(max) {
		n--
	}
	if n == 0 {
		return nil, smb2.StatusBufferTooSmall
	}
	b := make([]byte, l[:n].Size())
	l[:n].Encode(b)
	resp := &smb2.QueryInfoResponse{Buffer: b}
	if n < len(l) {
		return resp, smb2.StatusBufferOverflow
	}
	return resp, nil
}

// setEAs applies a FILE_FULL_EA_INFORMATION list: each entry sets an EA,
// an empty value removes it.
func (o *open) setEAs(b []byte) error {
	if err := o.need(smb2.FileWriteEA); err != nil {
		return err
	}
	var l fscc.FullEaInformation
	if err := l.Decode(b); err != nil {
		return smb2.StatusInvalidParameter
	}
	return o.storeEAs(l)
}

// storeEAs stores a decoded list.
func (o *open) storeEAs(l fscc.FullEaInformation) error {
	ef := o.eaFile()
	if ef == nil {
		return smb2.StatusEasNotSupported
	}
	for i := range l {
		if !l[i].Valid() || strings.ContainsAny(l[i].Name, `"*+,/:;<=>?[\]|`) {
			return smb2.StatusInvalidEaName
		}
	}
	for _, e := range l {
		if err := ef.SetEA(strings.ToUpper(e.Name), e.Value); err != nil {
			if errors.Is(err, errors.ErrUnsupported) {
				return smb2.StatusEasNotSupported
			}
			return err
		}
	}
	return nil
}

// applyCreateContexts stores what the create contexts of a CREATE that
// made a new file ask for: EAs ("ExtA"), a security descriptor ("SecD")
// and an allocation size ("AlSi") ([MS-SMB2] 2.2.13.2).
func (o *open) applyCreateContexts(req *smb2.CreateRequest, action uint32) error {
	if err := o.applyAllocSize(req, action); err != nil { // alloc.go: AlSi
		return err
	}
	if action != smb2.FileCreated && action != smb2.FileOverwritten && action != smb2.FileSuperseded {
		return nil
	}
	if k := req.Known(); k.Present(smb2.CtxEABuffer) {
		var l fscc.FullEaInformation
		if err := l.Decode(k.EABuffer); err != nil {
			return smb2.StatusInvalidParameter
		}
		if err := o.storeEAs(l); err != nil {
			return err
		}
	}
	if action != smb2.FileCreated {
		return nil
	}
	return o.applySecD(req)
}
