package server

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// statusOf maps an error to the NTSTATUS Windows returns for it.
func statusOf(err error) smb2.Status {
	if err == nil {
		return smb2.StatusSuccess
	}
	var st smb2.Status
	if errors.As(err, &st) {
		return st
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if s, ok := errnoStatus[errno]; ok {
			return s
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return smb2.StatusObjectNameNotFound
	case errors.Is(err, fs.ErrExist):
		return smb2.StatusObjectNameCollision
	case errors.Is(err, fs.ErrPermission):
		return smb2.StatusAccessDenied
	case errors.Is(err, context.Canceled):
		return smb2.StatusCancelled
	case errors.Is(err, context.DeadlineExceeded):
		// Another node did not answer in time (node/peer callTimeout:
		// a partition between the nodes).
		return smb2.StatusIOTimeout
	case errors.Is(err, fs.ErrClosed):
		return smb2.StatusFileClosed
	}
	return smb2.StatusUnexpectedIOError
}

var errnoStatus = map[syscall.Errno]smb2.Status{
	syscall.ENOENT:       smb2.StatusObjectNameNotFound,
	syscall.EEXIST:       smb2.StatusObjectNameCollision,
	syscall.EACCES:       smb2.StatusAccessDenied,
	syscall.EPERM:        smb2.StatusAccessDenied,
	syscall.EROFS:        smb2.StatusMediaWriteProtected,
	syscall.ENOTEMPTY:    smb2.StatusDirectoryNotEmpty,
	syscall.EISDIR:       smb2.StatusFileIsADirectory,
	syscall.ENOTDIR:      smb2.StatusNotADirectory,
	syscall.ENOSPC:       smb2.StatusDiskFull,
	syscall.EDQUOT:       smb2.StatusDiskFull,
	syscall.EFBIG:        smb2.StatusDiskFull,
	syscall.ENAMETOOLONG: smb2.StatusObjectNameInvalid,
	syscall.EXDEV:        smb2.StatusNotSameDevice,
	syscall.ELOOP:        smb2.StatusObjectPathNotFound,
	syscall.EINVAL:       smb2.StatusInvalidParameter,
	syscall.EBADF:        smb2.StatusInvalidHandle,
	syscall.ENOMEM:       smb2.StatusNoMemory,
	syscall.EMFILE:       smb2.StatusTooManyOpenedFiles,
	syscall.ENFILE:       smb2.StatusTooManyOpenedFiles,
	syscall.EBUSY:        smb2.StatusSharingViolation,
	syscall.ETXTBSY:      smb2.StatusSharingViolation,
	syscall.EOPNOTSUPP:   smb2.StatusNotSupported,
	syscall.EIO:          smb2.StatusUnexpectedIOError,
}
