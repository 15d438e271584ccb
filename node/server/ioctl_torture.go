package server

import (
	"encoding/binary"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT is Samba's test-only control
// (source3/smbd/smb2_ioctl_smbtorture.c). smbtorture sends it, without a
// session and with the all-ones FileId, on a connection whose client it
// is about to make unresponsive (its tests of replays and breaks on
// blocked channels, source4/torture/smb2/block.c). Samba then counts
// nothing it sends there as acknowledged by TCP: a break notification
// sent there fails once six retransmission timeouts pass, the connection
// is dropped and the break is sent on another channel of the client, as
// [MS-SMB2] 3.3.4.6 and 3.3.4.7 ask of a break that cannot be delivered.
//
// This server does the same for a connection marked by the control
// (conn.unresponsive): a break sent there is followed, after
// unackedBreakTimeout, by the loss of the connection and the break again
// on another connection of the client (sendBreak). It tracks no TCP
// acknowledgments otherwise.

// unackedBreakTimeout is how long a break sent on an unresponsive
// connection waits for its TCP acknowledgment: six retransmission
// timeouts of 200 ms, the least Samba assumes.
const unackedBreakTimeout = 6 * 200 * time.Millisecond

// sessionlessIoctl reports whether msg, an IOCTL PDU, is one the server
// takes without a session: FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT, as
// Samba takes it (CtlCode is at offset 4 of the body, [MS-SMB2] 2.2.31).
func sessionlessIoctl(msg []byte) bool {
	off := smb2.HeaderSize + 4
	return len(msg) >= off+4 && binary.LittleEndian.Uint32(msg[off:]) == smb2.FsctlSmbtortureForceUnackedTimeout
}

// forceUnackedTimeout answers FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT: it
// takes no input and names no open, as in Samba, and marks c unresponsive.
func (c *conn) forceUnackedTimeout(req *smb2.IoctlRequest) (Response, error) {
	if req.FileID != smb2.AnyFileID || len(req.Input) != 0 {
		return nil, smb2.StatusInvalidParameter
	}
	c.unresponsive.Store(true)
	return ioctlResponse(req, nil), nil
}

// sendBreak sends a break notification on c. On an unresponsive
// connection the notification is taken as lost after unackedBreakTimeout:
// the connection is dropped and retry sends the break on another
// connection of the client, if one is left.
func (c *conn) sendBreak(res result, retry func()) {
	_, lease := res.body.(*smb2.LeaseBreakNotification)
	c.srv.cfg.Metrics.BreakSent(lease)
	c.writeResults([]result{res})
	if !c.unresponsive.Load() {
		return
	}
	time.AfterFunc(unackedBreakTimeout, func() {
		if c.ctx.Err() == nil {
			c.srv.log.Info("dropping a connection that did not acknowledge a break", "remote", c.remote)
			c.close()
		}
		retry()
	})
}
