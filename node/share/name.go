package share

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// parsedName is a client path split into the vfs name and a stream.
type parsedName struct {
	name   string // slash-separated, relative to the share root; "" is the root
	stream string // named stream, "" for the default data stream
	// dataStream is set when the client named the default data stream
	// explicitly ("file::$DATA"): the name then cannot be a directory.
	dataStream bool
}

// parseName validates an SMB2 path name ([MS-FSCC] 2.1.5) and converts it to
// a vfs name. It refuses wildcards, control characters, empty, "." and ".."
// components and a leading backslash.
func parseName(n string) (parsedName, error) {
	if strings.HasPrefix(n, `\`) {
		return parsedName{}, smb2.StatusObjectNameInvalid
	}
	n = strings.TrimSuffix(n, `\`)
	if n == "" {
		return parsedName{}, nil
	}
	var p parsedName
	if i := strings.IndexByte(n, ':'); i >= 0 {
		stream, err := parseStream(n[i:])
		if err != nil {
			return parsedName{}, err
		}
		p.stream, p.dataStream = stream, stream == ""
		n = n[:i]
		if strings.ContainsRune(n, ':') || n == "" && stream != "" {
			return parsedName{}, smb2.StatusObjectNameInvalid
		}
	}
	var parts []string
	for _, c := range strings.Split(n, `\`) {
		if c == ".." {
			// ".." goes up lexically, never above the share root
			// (smbtorture smb2.notify.tree, smb2.mkdir).
			if len(parts) == 0 {
				return parsedName{}, smb2.StatusObjectPathSyntaxBad
			}
			parts = parts[:len(parts)-1]
			continue
		}
		if err := checkComponent(c); err != nil {
			return parsedName{}, err
		}
		parts = append(parts, c)
	}
	p.name = strings.Join(parts, "/")
	return p, nil
}

// parseStream parses ":name[:$DATA]"; the default stream "::$DATA" is "".
func parseStream(s string) (string, error) {
	s = s[1:]
	name, typ, hasType := strings.Cut(s, ":")
	if hasType && !strings.EqualFold(typ, "$DATA") {
		return "", smb2.StatusObjectNameInvalid
	}
	// Stream names may hold any character but the separators and NUL
	// (smbtorture smb2.streams.names2, as Windows).
	if strings.ContainsAny(name, "\\/:\x00") {
		return "", smb2.StatusObjectNameInvalid
	}
	return name, nil
}

func checkComponent(c string) error {
	if c == "" || c == "." || c == ".." {
		return smb2.StatusObjectNameInvalid
	}
	if len(c) > 255 {
		return smb2.StatusObjectNameInvalid
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if b < 0x20 || strings.IndexByte(`"*/:<>?|`, b) >= 0 {
			return smb2.StatusObjectNameInvalid
		}
	}
	return nil
}

// notFound refines a not-found error: when the parent directory is missing
// (or is not a directory) Windows answers STATUS_OBJECT_PATH_NOT_FOUND.
func (d *Disk) notFound(name string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) {
		return smb2.StatusObjectPathNotFound
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := path.Dir(name)
	if dir == "." {
		return smb2.StatusObjectNameNotFound
	}
	if fi, serr := d.fs.Stat(dir); serr != nil || !fi.IsDir {
		return smb2.StatusObjectPathNotFound
	}
	return smb2.StatusObjectNameNotFound
}
