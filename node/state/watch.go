package state

import (
	"path"
	"strings"
)

// Watch is the scope of a CHANGE_NOTIFY watch ([MS-SMB2] 3.3.5.19,
// [MS-FSA] 2.1.5.10): a directory, the completion filter for changes of
// its own entries, and — with WATCH_TREE — the filter for changes deeper
// down (zero without). It is known to every node of a cluster, so that a
// change made through any node reaches it.
type Watch struct {
	Dir        string // share-relative, slash-separated, "" for the root
	Filter     uint32
	TreeFilter uint32
}

// Covers reports whether a change of the file at share-relative name,
// of the kinds in filter, concerns the watch, and the name relative to
// the watched directory.
func (w Watch) Covers(name string, filter uint32) (rel string, ok bool) {
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	switch {
	case dir == w.Dir:
		return path.Base(name), w.Filter&filter != 0
	case w.TreeFilter&filter != 0 && (w.Dir == "" || strings.HasPrefix(name, w.Dir+"/")):
		return strings.TrimPrefix(name, w.Dir+"/"), true
	}
	return "", false
}
