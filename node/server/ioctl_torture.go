package server

import (
	"encoding/binary"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT is Samba's test-only control
// (source3/smbd/smb2_ioctl_smbtorture.c). smbtorture sends it, without a
// session and with the all-ones FileId, on a connection it is about to stop
// using, to simulate a channel whose peer stopped answering (its tests of
// replays and breaks on blocked channels, source4/torture/smb2/block.c).
// Samba then treats nothing it sends there as acknowledged by TCP, so
// that a break sent there times out and is retried on another channel.
//
// This server tracks no TCP acknowledgments and delivers a break on one
// live connection of the client without retrying it on another, so there
// is nothing to force: the control succeeds and changes nothing. What
// those tests then check of the server — a replay on another channel
// while a CREATE is pending on the silent one (smbtorture
// smb2.replay.dhv2-pending3*-sane) — is served as for a real blocked
// channel, whose client simply sends nothing more on it.

// sessionlessIoctl reports whether msg, an IOCTL PDU, is one the server
// takes without a session: FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT, as
// Samba takes it (CtlCode is at offset 4 of the body, [MS-SMB2] 2.2.31).
func sessionlessIoctl(msg []byte) bool {
	off := smb2.HeaderSize + 4
	return len(msg) >= off+4 && binary.LittleEndian.Uint32(msg[off:]) == smb2.FsctlSmbtortureForceUnackedTimeout
}

// forceUnackedTimeout answers FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT: it
// takes no input and names no open, as in Samba.
func forceUnackedTimeout(req *smb2.IoctlRequest) (Response, error) {
	if req.FileID != smb2.AnyFileID || len(req.Input) != 0 {
		return nil, smb2.StatusInvalidParameter
	}
	return ioctlResponse(req, nil), nil
}
