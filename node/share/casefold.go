package share

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Clients expect names to be case-insensitive and case-preserving, as on
// NTFS; the backends are case-sensitive. caseName maps a client name to
// the on-disk spelling the way Samba does with "case sensitive = no": an
// exact lookup first, and only when a component is missing a scan of its
// directory for a case-insensitive match (strings.EqualFold, Unicode simple
// folding). Two on-disk names differing only in case are both reachable by
// their exact spelling; a folded lookup picks the first in directory order.

// caseName returns the on-disk spelling of name, or name itself where no
// match exists (a file about to be created keeps the client's case).
func (d *Disk) caseName(name string) string {
	if name == "" {
		return name
	}
	if _, err := d.fs.Stat(name); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return name
	}
	parts := strings.Split(name, "/")
	dir := ""
	for i, p := range parts {
		full := joinName(dir, p)
		if _, err := d.fs.Stat(full); errors.Is(err, fs.ErrNotExist) {
			m, ok := d.findFold(dir, p)
			if !ok {
				return joinName(dir, strings.Join(parts[i:], "/"))
			}
			full = joinName(dir, m)
		}
		dir = full
	}
	return dir
}

// joinName joins a directory vfs name ("" for the root) and a relative name.
func joinName(dir, rel string) string {
	if dir == "" {
		return rel
	}
	return dir + "/" + rel
}

// findFold looks in directory dir for an entry equal to base under case
// folding.
func (d *Disk) findFold(dir, base string) (string, bool) {
	f, _, err := d.fs.Open(dir, vfs.OpenOptions{Read: true, Kind: vfs.DirOnly})
	if err != nil {
		return "", false
	}
	defer f.Close()
	names, err := readNames(f)
	if err != nil {
		return "", false
	}
	for _, n := range names {
		if strings.EqualFold(n, base) {
			return n, true
		}
	}
	return "", false
}

// readNames lists a directory's names, cheaply when the backend can.
func readNames(f vfs.File) ([]string, error) {
	if nr, ok := f.(vfs.NameReader); ok {
		names, err := nr.ReadDirNames()
		if !errors.Is(err, errors.ErrUnsupported) {
			return names, err
		}
	}
	all, err := f.ReadDir()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, fi := range all {
		names[i] = fi.Name
	}
	return names, nil
}

// renameTarget resolves the target of a rename of the open's file: the
// directory part is folded like any name; the last component takes the
// spelling of an existing entry, except when that entry is the file being
// renamed (a change of case only).
func (d *Disk) renameTarget(target, current string) string {
	r := d.caseName(target)
	if r != target && r == current {
		return joinName(parentDir(r), path.Base(target))
	}
	return r
}
