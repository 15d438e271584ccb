package server

import "github.com/smbcluster/smbcluster/node/smb2"

// checkChannelSequence verifies the ChannelSequence of a 3.x request on
// open o and counts the request as outstanding ([MS-SMB2] 3.3.5.2.10). A
// client raises its ChannelSequence after it lost a channel, so that the
// server can tell requests sent before the failure from those sent after:
//
//   - the open's ChannelSequence: one more outstanding request of it;
//   - a newer one (at most 0x7FFF ahead, in 16-bit arithmetic): it becomes
//     the open's, and the requests still outstanding under the old value
//     are counted apart (OutstandingPreRequestCount);
//   - a replay (SMB2_FLAGS_REPLAY_OPERATION) is counted so only while no
//     request of an older ChannelSequence is outstanding: otherwise a
//     replayed WRITE could overtake the original still in flight on the
//     lost channel;
//   - anything else fails WRITE, SET_INFO and IOCTL with
//     STATUS_FILE_NOT_AVAILABLE (the client retries) and lets the other
//     commands through uncounted.
//
// doneChannelSequence undoes the count when the request completes.
func (r *Request) checkChannelSequence(o *Open) error {
	d := r.conn.dialect
	if d < smb2.Dialect300 || d == smb2.DialectWildcard || r.csnOpen == o {
		return nil
	}
	csn := r.Header.ChannelSequence()
	replay := r.Header.Flags&smb2.FlagReplayOperation != 0
	o.mu.Lock()
	defer o.mu.Unlock()
	diff := csn - o.chanSeq
	calm := !replay || o.preOutstanding == 0
	switch {
	case diff == 0 && calm:
		o.outstanding++
	case diff != 0 && diff <= 0x7fff && calm:
		o.preOutstanding += o.outstanding
		o.outstanding = 1
		o.chanSeq = csn
		o.chanEpoch++
	default:
		switch r.Header.Command {
		case smb2.CmdWrite, smb2.CmdSetInfo, smb2.CmdIoctl:
			return smb2.StatusFileNotAvailable
		}
		return nil
	}
	r.csnOpen, r.csnEpoch = o, o.chanEpoch
	return nil
}

// doneChannelSequence ends the count checkChannelSequence made: in
// OutstandingRequestCount while the open's ChannelSequence is still the
// one the request was counted under, else in OutstandingPreRequestCount.
func (r *Request) doneChannelSequence() {
	o := r.csnOpen
	if o == nil {
		return
	}
	r.csnOpen = nil
	o.mu.Lock()
	if o.chanEpoch == r.csnEpoch {
		o.outstanding--
	} else if o.preOutstanding > 0 {
		o.preOutstanding--
	}
	o.mu.Unlock()
}
