package server

import (
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// FuzzSessionlessIoctl: sessionlessIoctl never panics and admits only
// FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT.
func FuzzSessionlessIoctl(f *testing.F) {
	pdu := make([]byte, smb2.HeaderSize+57)
	binary.LittleEndian.PutUint32(pdu[smb2.HeaderSize+4:], smb2.FsctlSmbtortureForceUnackedTimeout)
	f.Add(pdu)
	f.Add(pdu[:smb2.HeaderSize+7])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		if sessionlessIoctl(msg) && binary.LittleEndian.Uint32(msg[smb2.HeaderSize+4:]) != smb2.FsctlSmbtortureForceUnackedTimeout {
			t.Fatal("admitted another control code")
		}
	})
}
