package server

import "github.com/smbcluster/smbcluster/node/smb2"

// checkChannelSequence verifies the ChannelSequence of a 3.x request on
// open o ([MS-SMB2] 3.3.5.2.10). A client raises its ChannelSequence after
// it lost a channel, so that the server can tell requests sent before the
// failure from those sent after: a newer value becomes the open's, and a
// stale one (more than 0x7FFF behind, in 16-bit arithmetic) fails WRITE,
// SET_INFO and IOCTL with STATUS_FILE_NOT_AVAILABLE. The counts of
// outstanding requests the spec keeps per sequence are not: a replay
// with the open's present ChannelSequence is always let through.
func (r *Request) checkChannelSequence(o *Open) error {
	d := r.conn.dialect
	if d < smb2.Dialect300 || d == smb2.DialectWildcard {
		return nil
	}
	csn := r.Header.ChannelSequence()
	o.mu.Lock()
	defer o.mu.Unlock()
	switch diff := csn - o.chanSeq; {
	case diff == 0:
	case diff <= 0x7fff:
		o.chanSeq = csn
	default:
		switch r.Header.Command {
		case smb2.CmdWrite, smb2.CmdSetInfo, smb2.CmdIoctl:
			return smb2.StatusFileNotAvailable
		}
	}
	return nil
}
