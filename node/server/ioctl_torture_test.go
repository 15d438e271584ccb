package server_test

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/node/server/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestForceUnackedTimeout: Samba's FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT
// is taken without a session, as smbtorture sends it before it stops using
// a channel, and needs the all-ones FileId and no input; other FSCTLs
// still need a session.
func TestForceUnackedTimeout(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	ctl := smb2.FsctlSmbtortureForceUnackedTimeout
	if _, err := c.Ioctl(ctl, smb2.AnyFileID, nil, 0); err != nil {
		t.Fatalf("without a session: %v", err)
	}
	if _, err := c.Ioctl(ctl, smb2.FileID{}, nil, 0); !errors.Is(err, smb2.StatusInvalidParameter) {
		t.Fatalf("with a FileId: %v, want STATUS_INVALID_PARAMETER", err)
	}
	if _, err := c.Ioctl(ctl, smb2.AnyFileID, []byte{1}, 0); !errors.Is(err, smb2.StatusInvalidParameter) {
		t.Fatalf("with input: %v, want STATUS_INVALID_PARAMETER", err)
	}
	if _, err := c.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 4096); !errors.Is(err, smb2.StatusUserSessionDeleted) {
		t.Fatalf("another FSCTL without a session: %v, want STATUS_USER_SESSION_DELETED", err)
	}

	// On a session and tree it is answered the same way.
	c2 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	if _, err := c2.Ioctl(ctl, smb2.AnyFileID, nil, 0); err != nil {
		t.Fatalf("on a tree: %v", err)
	}
	if err := c2.Echo(); err != nil {
		t.Fatal(err)
	}
}
