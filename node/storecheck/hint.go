package storecheck

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// hints name the fix for the filesystems whose clients are known not to
// be coherent with their defaults (docs/STORAGE.md), by mount type.
var hints = map[string]string{
	"fuse.glusterfs": "GlusterFS: mount with direct-io-mode=enable,attribute-timeout=0,entry-timeout=0 and turn off the volume's client-side caching " +
		"(gluster volume set VOL performance.write-behind off, and read-ahead, io-cache, quick-read, stat-prefetch, open-behind, readdir-ahead)",
	"fuse.ceph-fuse": "CephFS: run ceph-fuse with --fuse_disable_pagecache=true --client_oc=false (or fuse_disable_pagecache = true and client_oc = false in ceph.conf's [client] section)",
	"ceph":           "CephFS (kernel client): the kernel client is coherent through its capabilities; check the mount options (no 'fsc', no 'nocrc' caching changes) and the MDS",
	"nfs":            "NFS: mount with actimeo=0 (or noac) and lookupcache=none, and no 'fsc'",
	"nfs4":           "NFS: mount with actimeo=0 (or noac) and lookupcache=none, and no 'fsc'",
}

// hint is the fix known for the filesystem mounted at root, or "".
func hint(root string) string {
	if h := hints[mountType(root)]; h != "" {
		return " — " + h + " (see docs/STORAGE.md)"
	}
	return ""
}

// mountType is the type of the mount holding path, from
// /proc/self/mountinfo (the longest mount point that is a prefix of it).
func mountType(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, typ := -1, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - TYPE SOURCE SUPEROPTS
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		mp := unescapeMount(fields[4])
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= best {
			best, typ = len(mp), fields[sep+1]
		}
	}
	return typ
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			n := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				n = n*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
