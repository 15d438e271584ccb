// Package osfs is the Linux backend of vfs: one share rooted at a directory
// of the local (or shared cluster) filesystem.
//
// Invariant: no name ever resolves outside the root. The root directory is
// opened once (O_PATH) and every name is resolved relative to that
// descriptor with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS); operations
// on a name (stat, unlink, rename, mkdir) act on the parent directory
// descriptor obtained that way, never on a joined absolute path.
//
// Names. A name is slash-separated and relative; "" is the root. A name that
// is absolute, contains a NUL byte, an empty component ("a//b", "a/") or a
// "." component is rejected with syscall.EINVAL. A ".." component is refused
// with syscall.EACCES (errors.Is(err, fs.ErrPermission)), as is any symbolic
// link whose resolution would leave the root (openat2's EXDEV is reported as
// EACCES): the client asked for something that exists but is not theirs.
//
// Symbolic links inside the share are followed when their target stays
// beneath the root. Stat and ReadDir describe such a link by its target; a
// link that dangles or points outside is described as itself (a regular,
// non-directory entry of the link's size) so that a client can see and
// delete it, while opening it fails. Remove and Rename act on the link, never
// on its target. Nothing is ever created through a symbolic link: creation
// uses O_CREAT|O_EXCL and mkdirat, which do not follow a final link.
//
// DOS attributes and a settable creation time live in the extended attribute
// user.smbcluster.dosattrib (see dosattrib.go). When the filesystem has no
// user xattrs, attributes are derived (AttrDirectory / AttrArchive) and
// SetInfo's attributes and creation time are silently dropped.
//
// FileID is the inode number, the same on every node sharing the
// filesystem. Files are safe for concurrent use: the descriptor is held
// by an os.File, so Close never races a pread/pwrite onto a reused
// descriptor; ReadDir calls on one directory are serialized.
//
// Only regular files and directories are served; opening a FIFO, socket or
// device fails with fs.ErrPermission. Open with Truncate needs a writable
// descriptor, so the file is opened for writing even when o.Write is false
// (the returned File still refuses WriteAt unless o.Write).
package osfs
