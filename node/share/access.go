package share

import (
	"errors"
	"hash/fnv"
	"path"
	"strings"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Identities and access checks against stored security descriptors.
//
// A file without a stored descriptor is governed by the share alone
// (MaximalAccess) and is described as owned by whoever opened it. A file
// with one — set by SET_INFO, a SecD create context, or inherited from its
// directory when created — is opened only for the access its DACL grants
// the session's user ([MS-DTYP] 2.5.3.2), with the owner's implicit
// READ_CONTROL and WRITE_DAC, DELETE through the parent's
// FILE_DELETE_CHILD and FILE_READ_ATTRIBUTES through the parent's
// FILE_LIST_DIRECTORY ([MS-FSA] 2.1.5.1.2.1). There are no privileges:
// ACCESS_SYSTEM_SECURITY stays a matter of the share.

// domainSubAuthorities identify the node's user domain,
// S-1-5-21-2843017236-1931480297-3419566741: a constant, so that every node
// of a cluster gives a user the same SID.
var domainSubAuthorities = [3]uint32{2843017236, 1931480297, 3419566741}

// SIDOwnerRights is OWNER RIGHTS (S-1-3-4, [MS-DTYP] 2.4.2.4): ACEs for it
// replace the owner's implicit rights.
var SIDOwnerRights = fscc.MustParseSID("S-1-3-4")

// UserSID returns the SID of a user of the node:
// S-1-5-21-<node domain>-<rid>, the relative id derived from the user name
// without regard to case (FNV-1a), at least 1000 as Windows gives ordinary
// accounts. It is the same on every node.
func UserSID(user string) fscc.SID {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(user)))
	rid := 1000 + h.Sum32()%(1<<30)
	d := domainSubAuthorities
	return fscc.SID{Revision: 1, Authority: [6]byte{5: 5}, SubAuthorities: []uint32{21, d[0], d[1], d[2], rid}}
}

// token is the set of SIDs an access check matches ACEs against.
type token struct {
	user fscc.SID
	sids []fscc.SID // user first
}

// tokenOf builds the token of a session's user: the user, Everyone, and
// Authenticated Users and Users for a real logon (Anonymous Logon or
// Guests otherwise). A request without a session (tests) acts as the
// user "".
func tokenOf(s *server.Session) *token {
	var t token
	switch {
	case s != nil && s.Anonymous:
		t.user = fscc.SIDAnonymous
		t.sids = []fscc.SID{t.user, fscc.SIDEveryone}
	case s != nil && s.Guest:
		t.user = fscc.SIDGuests
		t.sids = []fscc.SID{t.user, fscc.SIDEveryone}
	default:
		name := ""
		if s != nil {
			name = s.User
		}
		t.user = UserSID(name)
		t.sids = []fscc.SID{t.user, fscc.SIDEveryone, fscc.SIDAuthenticatedUsers, fscc.SIDUsers}
	}
	return &t
}

func (t *token) has(sid fscc.SID) bool {
	for _, s := range t.sids {
		if s.Equal(sid) {
			return true
		}
	}
	return false
}

// mapFileGeneric maps the generic bits of an access mask with the file
// generic mapping ([MS-DTYP] 2.5.3.2 GenericMapping, [MS-SMB2] 2.2.13.1.1).
func mapFileGeneric(m uint32) uint32 {
	if m&smb2.GenericAll != 0 {
		m |= fscc.FileAllAccess
	}
	if m&smb2.GenericRead != 0 {
		m |= fscc.FileGenericRead
	}
	if m&smb2.GenericWrite != 0 {
		m |= fscc.FileGenericWrite
	}
	if m&smb2.GenericExecute != 0 {
		m |= fscc.FileGenericExecute
	}
	return m &^ (smb2.GenericAll | smb2.GenericRead | smb2.GenericWrite | smb2.GenericExecute)
}

// grantedBy returns the access that sd grants t ([MS-DTYP] 2.5.3.2): all
// of it for a NULL DACL; otherwise the owner's READ_CONTROL and WRITE_DAC
// (unless OWNER RIGHTS ACEs say otherwise) and the allow ACEs for t's SIDs
// that no earlier deny ACE took back. Inherit-only, object and callback
// ACEs do not count; CREATOR OWNER matches nobody.
func grantedBy(sd *fscc.SecurityDescriptor, t *token) uint32 {
	if sd.DACL == nil {
		return fscc.FileAllAccess
	}
	var granted, denied uint32
	ownerRights := true
	for i := range sd.DACL.ACEs {
		if sd.DACL.ACEs[i].SID.Equal(SIDOwnerRights) {
			ownerRights = false
		}
	}
	isOwner := sd.Owner != nil && t.has(*sd.Owner)
	if isOwner && ownerRights {
		granted = fscc.ReadControl | fscc.WriteDAC
	}
	for i := range sd.DACL.ACEs {
		a := &sd.DACL.ACEs[i]
		if a.Flags&fscc.InheritOnlyACE != 0 {
			continue
		}
		match := t.has(a.SID) || isOwner && a.SID.Equal(SIDOwnerRights)
		if !match {
			continue
		}
		m := mapFileGeneric(a.Mask)
		switch a.Type {
		case fscc.AccessAllowedACEType:
			granted |= m &^ denied
		case fscc.AccessDeniedACEType:
			denied |= m &^ granted
		}
	}
	return granted
}

// storedSD returns the descriptor stored for f, nil when there is none
// (or the backend keeps none, or it does not decode).
func storedSD(f vfs.File) *fscc.SecurityDescriptor {
	sf, ok := f.(vfs.SecurityFile)
	if !ok {
		return nil
	}
	b, err := sf.Security()
	if err != nil || b == nil {
		return nil
	}
	sd := new(fscc.SecurityDescriptor)
	if sd.Decode(b) != nil {
		return nil
	}
	return sd
}

// parentSD returns the stored descriptor of name's directory, nil when
// there is none; the share root has no parent.
func (d *Disk) parentSD(name string) *fscc.SecurityDescriptor {
	if name == "" {
		return nil
	}
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	f, _, err := d.fs.Open(dir, vfs.OpenOptions{Read: true, Kind: vfs.DirOnly})
	if err != nil {
		return nil
	}
	defer f.Close()
	return storedSD(f)
}

// authorize applies the stored descriptors to a CREATE that opened or made
// a file ([MS-FSA] 2.1.5.1.2.1): an existing file is opened only for what
// its DACL grants (MAXIMUM_ALLOWED becomes exactly that); a new one needs
// FILE_ADD_FILE (FILE_ADD_SUBDIRECTORY) on its directory and inherits the
// directory's inheritable ACEs ([MS-DTYP] 2.5.3.4). The creator of a file
// gets the access it asked for.
func (d *Disk) authorize(r *server.Request, o *open, req *smb2.CreateRequest, action uint32) error {
	t := tokenOf(r.Session)
	o.owner = t.user
	if action == smb2.FileCreated {
		return d.inherit(o, t)
	}
	sd := storedSD(o.f)
	if sd == nil {
		return nil
	}
	desired := mapFileGeneric(req.DesiredAccess) &^ (smb2.MaximumAllowed | smb2.AccessSystemSecurity)
	maxAllowed := req.DesiredAccess&smb2.MaximumAllowed != 0
	granted := grantedBy(sd, t)
	check := desired | destroyAccess(action)
	extra := fscc.Delete | fscc.FileReadAttributes
	if need := check &^ granted; need&extra != 0 || maxAllowed && granted&extra != extra {
		granted |= d.parentGrants(o.name, t)
	}
	if check&^granted != 0 {
		return smb2.StatusAccessDenied
	}
	if req.DesiredAccess&smb2.MaximumAllowed != 0 {
		keep := o.access | ^uint32(readOnlyCleared) // what the open (create.go) may have at all
		o.access = (granted&d.MaximalAccess(r.Session) | desired | req.DesiredAccess&smb2.AccessSystemSecurity) & keep
	}
	return nil
}

// destroyAccess is the access that overwriting or superseding a file
// needs besides the access asked for: its data, EAs and attributes are
// replaced (FILE_WRITE_DATA, FILE_WRITE_EA, FILE_WRITE_ATTRIBUTES), and a
// supersede deletes the file it replaces (DELETE), as Windows file
// systems check them on IRP_MJ_CREATE (smbtorture
// smb2.acls.OVERWRITE_READ_ONLY_FILE: a DACL granting only
// FILE_READ_DATA refuses all three dispositions).
func destroyAccess(action uint32) uint32 {
	switch action {
	case smb2.FileOverwritten:
		return fscc.FileWriteData | fscc.FileWriteEA | fscc.FileWriteAttributes
	case smb2.FileSuperseded:
		return fscc.Delete | fscc.FileWriteEA | fscc.FileWriteAttributes
	}
	return 0
}

// parentGrants is what name's directory grants t on name itself
// ([MS-FSA] 2.1.5.1.2.1): DELETE through FILE_DELETE_CHILD and
// FILE_READ_ATTRIBUTES through FILE_LIST_DIRECTORY.
func (d *Disk) parentGrants(name string, t *token) uint32 {
	pg := uint32(fscc.FileAllAccess)
	if psd := d.parentSD(name); psd != nil {
		pg = grantedBy(psd, t)
	}
	var g uint32
	if pg&fscc.FileDeleteChild != 0 {
		g |= fscc.Delete
	}
	if pg&fscc.FileReadData != 0 { // FILE_LIST_DIRECTORY
		g |= fscc.FileReadAttributes
	}
	return g
}

// maximalAccess is the access the CREATE's MxAc context reports for open
// o ([MS-SMB2] 3.3.5.9.5): what the file's stored descriptor grants the
// session's user (its DACL, OWNER RIGHTS, the parent's DELETE and
// FILE_READ_ATTRIBUTES) within what the share allows; the share's alone
// for a file without one.
func (d *Disk) maximalAccess(r *server.Request, o *open) uint32 {
	share := d.MaximalAccess(r.Session)
	sd := storedSD(o.f)
	if sd == nil {
		return share
	}
	t := tokenOf(r.Session)
	return (grantedBy(sd, t) | d.parentGrants(o.name, t)) & share
}

// addAccess is the right a new file or directory needs on its parent.
func addAccess(isDir bool) uint32 {
	if isDir {
		return fscc.FileAppendData // FILE_ADD_SUBDIRECTORY
	}
	return fscc.FileWriteData // FILE_ADD_FILE
}

// inherit checks that the new file's directory lets t add it and stores
// the descriptor the file inherits, if the directory has a stored one
// with inheritable ACEs. A refused file is removed again.
func (d *Disk) inherit(o *open, t *token) error {
	psd := d.parentSD(o.name)
	if psd == nil {
		return nil
	}
	if grantedBy(psd, t)&addAccess(o.isDir) == 0 {
		if err := d.fs.Remove(o.name); err != nil {
			d.log.Debug("removing a refused new file failed", "share", d.name, "file", o.name, "err", err)
		}
		return smb2.StatusAccessDenied
	}
	group := fscc.UnixGroupSID(0)
	if psd.DACL == nil {
		return nil // a NULL DACL has nothing to inherit
	}
	dacl := inheritedACL(psd.DACL, o.isDir, t.user, group, psd.Control&fscc.SEDACLAutoInherited != 0)
	if len(dacl.ACEs) == 0 {
		return nil // nothing inherited: the default descriptor describes it
	}
	if dacl.Size() > 0xffff { // AclSize is 16 bits ([MS-DTYP] 2.4.5)
		d.fs.Remove(o.name)
		return smb2.StatusInvalidSecurityDescr
	}
	sf, ok := o.f.(vfs.SecurityFile)
	if !ok {
		return nil
	}
	sd := fscc.SecurityDescriptor{
		Control: fscc.SESelfRelative | fscc.SEDACLPresent | psd.Control&fscc.SEDACLAutoInherited,
		Owner:   &t.user, Group: &group, DACL: dacl,
	}
	if err := sf.SetSecurity(sd.Bytes()); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// inheritedACL computes the DACL a new file (isDir false) or directory
// inherits from its parent's ([MS-DTYP] 2.5.3.4.2 ComputeACL, without
// object types): CREATOR OWNER and CREATOR GROUP become the new file's
// owner and group and generic rights are mapped in the ACEs that apply to
// it; a directory also keeps inheritable copies for its own children.
// The inherited ACEs carry INHERITED_ACE only with auto-inheritance, when
// the parent's DACL is SE_DACL_AUTO_INHERITED (the DACL_AUTO_INHERIT flag
// of 2.5.3.4.1; smbtorture smb2.acls.INHERITANCE and INHERITFLAGS check
// both ways against Windows).
func inheritedACL(parent *fscc.ACL, isDir bool, owner, group fscc.SID, auto bool) *fscc.ACL {
	out := computeInherited(parent, isDir, owner, group)
	if !auto {
		for i := range out.ACEs {
			out.ACEs[i].Flags &^= fscc.InheritedACE
		}
	}
	return out
}

func computeInherited(parent *fscc.ACL, isDir bool, owner, group fscc.SID) *fscc.ACL {
	out := &fscc.ACL{Revision: parent.Revision}
	const inheritFlags = fscc.ObjectInheritACE | fscc.ContainerInheritACE | fscc.NoPropagateInheritACE | fscc.InheritOnlyACE
	for _, a := range parent.ACEs {
		oi, ci := a.Flags&fscc.ObjectInheritACE != 0, a.Flags&fscc.ContainerInheritACE != 0
		noProp := a.Flags&fscc.NoPropagateInheritACE != 0
		base := a.Flags &^ (inheritFlags | fscc.InheritedACE)
		effective := a
		effective.Flags = base | fscc.InheritedACE
		effective.Mask = mapFileGeneric(a.Mask)
		switch {
		case a.SID.Equal(fscc.SIDCreatorOwner):
			effective.SID = owner
		case a.SID.Equal(fscc.SIDCreatorGroup):
			effective.SID = group
		}
		switch {
		case !isDir && oi:
			out.ACEs = append(out.ACEs, effective)
		case isDir && ci:
			changed := !effective.SID.Equal(a.SID) || effective.Mask != a.Mask
			if noProp || !changed {
				if !noProp {
					effective.Flags |= a.Flags & (fscc.ObjectInheritACE | fscc.ContainerInheritACE)
					effective.Mask, effective.SID = a.Mask, a.SID
				}
				out.ACEs = append(out.ACEs, effective)
				continue
			}
			out.ACEs = append(out.ACEs, effective)
			fallthrough
		case isDir && oi && !noProp:
			keep := a
			keep.Flags = a.Flags&(fscc.ObjectInheritACE|fscc.ContainerInheritACE) | fscc.InheritOnlyACE | fscc.InheritedACE | base
			out.ACEs = append(out.ACEs, keep)
		}
	}
	return out
}
