package robustness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// The operations beyond registers, counters and holds (issue 23's list):
// durable and persistent opens reconnected through another node, names
// published by rename and deleted, and writes read back through another
// channel of the session. Each works on files of its own, so the other
// operations' invariants are untouched.

// Durable operations' shape: chunks of chunkSize bytes written through,
// each a value unique to the client, its sequence number and the chunk.
const (
	durableChunks  = 3
	chunkSize      = 16 // "c%02d-%09d-k%d"
	durableTimeout = time.Minute
	// reconnectBound is how long a durable operation tries to reconnect
	// its open, through one node after another: past a fence (lease TTL)
	// and a shard's move to another owner.
	reconnectBound = 15 * time.Second
)

// Access of an open that renames its file: read, write and DELETE.
const accessRename = accessReadWrite | 0x00010000

// guid makes a GUID of the seed, the client, its sequence number and a
// tag (a ClientGuid, a CreateGuid, a lease key): new for every operation,
// the same for the same seed.
func (w *Workload) guid(id, seq int, tag byte) [16]byte {
	var g [16]byte
	binary.LittleEndian.PutUint64(g[:], w.cfg.Seed)
	binary.LittleEndian.PutUint16(g[8:], uint16(id))
	binary.LittleEndian.PutUint32(g[10:], uint32(seq))
	g[14], g[15] = 0xd0, tag
	return g
}

// durable opens o.File, new, through l's node with a durable v2 handle
// and a read-write-handle lease — persistent on the continuously
// available share if persistent is set — on a connection of its own
// (its own ClientGuid), writes durableChunks chunks through to storage
// (SMB2_WRITEFLAG_WRITE_THROUGH), then drops the connection (no LOGOFF:
// the open outlives it, as after a lost connection or node) and
// reconnects the open (DH2C) through the next node, and the next, until
// one takes it or reconnectBound passes; the reconnected open reads the
// chunks back. Outcome: failed if the durable open was refused (nothing
// to check), unknown if no node reconnected it (ReconnErr says why: a
// counted outcome, not a violation), ok if it read back.
func (w *Workload) durable(l *link, o *Op, id, seq int, persistent bool) bool {
	share := w.cfg.Share
	if persistent {
		share = w.cfg.CAShare
	}
	guid := w.guid(id, seq, 1)
	o.Call = w.hist.Now()
	a, err := w.dialAs(l.node, share, guid, false)
	if err != nil {
		o.Return, o.Outcome, o.Err = w.hist.Now(), Failed, "logon: "+shortErr(err)
		return true // l is untouched
	}
	opts := smbc.DurableOptions{CreateGUID: w.guid(id, seq, 2), LeaseKey: w.guid(id, seq, 3),
		LeaseState: smb2.LeaseRead | smb2.LeaseHandle | smb2.LeaseWrite, Timeout: durableTimeout,
		Persistent: persistent, ShareAccess: shareAll}
	var f *smbc.File
	var d smbc.Durable
	if err := a.step(o, func() (err error) { f, d, err = a.c.OpenDurable(o.File, opts); return }); err != nil {
		a.close()
		o.Return, o.Outcome = w.hist.Now(), Failed
		return true
	}
	o.Persistent = d.Persistent
	through := f.WriteThrough()
	for k := range durableChunks {
		c := Chunk{Off: int64(k * chunkSize), Value: chunkValue(id, seq, k), Outcome: OK}
		if a.dead {
			break // not sent
		}
		if err := a.step(o, func() error { _, err := through.WriteAt([]byte(c.Value), c.Off); return err }); err != nil {
			c.Outcome = Unknown // an NTSTATUS too: only what was acknowledged is checked
		}
		o.Chunks = append(o.Chunks, c)
	}
	a.close() // the connection lost, the open kept

	deadline := time.Now().Add(reconnectBound)
	node := l.node
	var b *link
	for !w.stopped() {
		node = (node + 1) % len(w.cfg.Addrs)
		if b, err = w.dialAs(node, share, guid, false); err == nil {
			var g *smbc.File
			var scratch Op
			if err = b.step(&scratch, func() (err error) { g, err = b.c.Reconnect(d); return }); err == nil {
				f = g
				break
			}
			b.close()
			b = nil
		}
		o.ReconnErr = shortErr(err)
		if time.Now().After(deadline) {
			break
		}
		w.pause(500 * time.Millisecond)
	}
	if b == nil {
		if o.ReconnErr == "" {
			o.ReconnErr = "the workload stopped first"
		}
		o.Return, o.Outcome = w.hist.Now(), Unknown
		return true
	}
	defer b.close()
	o.Reconnected, o.ReconnNode, o.ReconnErr = true, node, ""
	for i := range o.Chunks {
		c := &o.Chunks[i]
		buf := make([]byte, chunkSize)
		var n int
		if err := b.step(o, func() error { var err error; n, err = f.ReadAt(buf, c.Off); return ignoreEOF(err) }); err != nil {
			break
		}
		c.Read, c.Got = true, string(buf[:n])
	}
	o.Return, o.Outcome = w.hist.Now(), OK
	if b.dead {
		o.Outcome = Unknown
		return true
	}
	w.after(b, o, "close", f.Close)
	if !b.dead {
		w.after(b, o, "remove", func() error { return b.c.Remove(o.File) })
	}
	return true
}

// chunkValue is chunk k of client id's seq-th operation: chunkSize
// bytes.
func chunkValue(id, seq, k int) string {
	return fmt.Sprintf("c%02d-%09d-k%d", id%100, seq%1_000_000_000, k%10)
}

// ignoreEOF is err, but nil for a short read's io.EOF.
func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// publish creates o.Temp, writes o.Value to it, renames it over o.File
// (ReplaceIfExists) and closes it; then opens o.Temp again, which must
// not be found (TempFound if it was). The write is not the outcome: a
// publish is ok when the rename was answered success, failed when it or
// a step before it was refused (a refused temp file is removed),
// unknown when the rename went unanswered.
func (w *Workload) publish(l *link, o *Op) bool {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenMode(o.Temp, accessRename, shareAll, true); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return !l.dead
	}
	if err := l.step(o, func() error { _, err := l.on(f).WriteAt([]byte(o.Value), 0); return err }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed // the name untouched
		w.finish(l, o, f)
		w.cleanTemp(l, o)
		return !l.dead
	}
	err := l.step(o, func() error { return l.on(f).Rename(o.File, true) })
	o.Return, o.Outcome = w.hist.Now(), OK
	if err != nil {
		o.Outcome = Failed
		if !isStatusErr(err) {
			o.Outcome = Unknown
		}
	}
	if !w.finish(l, o, f) || o.Outcome == Unknown {
		return !l.dead
	}
	if o.Outcome == Failed {
		w.cleanTemp(l, o)
		return !l.dead
	}
	var g *smbc.File
	var scratch Op
	switch err := l.step(&scratch, func() (err error) { g, err = l.pick().OpenMode(o.Temp, accessRead, shareAll, false); return }); {
	case err == nil:
		o.TempFound = true
		w.after(l, o, "close of the old name", l.on(g).Close)
	case isStatus(err, smb2.StatusObjectNameNotFound):
	default:
		if o.After != "" {
			o.After += "; "
		}
		o.After += "open of the old name: " + scratch.Err
	}
	return !l.dead
}

// cleanTemp removes a publish's temporary file that was not renamed.
func (w *Workload) cleanTemp(l *link, o *Op) {
	if !l.dead {
		w.after(l, o, "remove of "+o.Temp, func() error { return l.pick().Remove(o.Temp) })
	}
}

// delete opens o.File delete-on-close sharing nothing (refused while
// another open of it is held) and closes it: ok when the close was
// answered, the file gone then; failed when the open was refused (no
// file there, a sharing violation); unknown when the open or the close
// went unanswered (the server deletes the file when it drops the open).
func (w *Workload) delete(l *link, o *Op) bool {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenDelete(o.File, shareNone); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		if !isStatusErr(err) {
			o.Outcome = Unknown // opened, perhaps, and dropped with the connection: deleted
		}
		return !l.dead
	}
	err := l.step(o, l.on(f).Close)
	o.Return, o.Outcome = w.hist.Now(), OK
	if err != nil {
		o.Outcome = Unknown
	}
	return !l.dead
}

// nameRead opens o.File and reads it (Found, Value), or is answered
// STATUS_OBJECT_NAME_NOT_FOUND (ok, not Found). Any other refusal (a
// sharing violation beside a delete, STATUS_DELETE_PENDING) fails it:
// it says nothing.
func (w *Workload) nameRead(l *link, o *Op) bool {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(o, func() (err error) { f, err = l.pick().OpenMode(o.File, accessRead, shareAll, false); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		if isStatus(err, smb2.StatusObjectNameNotFound) {
			o.Outcome, o.Err = OK, ""
		}
		return !l.dead
	}
	buf := make([]byte, registerSize)
	var n int
	err := l.step(o, func() error { return readAt(l.on(f), buf, &n) })
	o.Return, o.Outcome, o.Found, o.Value = w.hist.Now(), OK, true, string(buf[:n])
	if err != nil {
		o.Outcome = Failed
	}
	return w.finish(l, o, f)
}

// chanRW writes o.Value over the client's own file through one channel
// of its session and reads it back through the other (the same one when
// the session has one channel): two operations of the history, a
// ChanWrite (its outcome as a register write's) and a ChanRead sent
// only after the write's answer.
func (w *Workload) chanRW(l *link, o Op) ([]Op, bool) {
	o.Call = w.hist.Now()
	var f *smbc.File
	if err := l.step(&o, func() (err error) { f, err = l.pick().OpenMode(o.File, accessReadWrite, shareAll, true); return }); err != nil {
		o.Return, o.Outcome = w.hist.Now(), Failed
		return []Op{o}, !l.dead
	}
	wi := 0
	if l.rng != nil {
		wi = l.rng.IntN(len(l.chans))
	}
	ri := (wi + 1) % len(l.chans)
	o.Via = l.nodes[wi]
	err := l.step(&o, func() error { _, err := f.On(l.chans[wi]).WriteAt([]byte(o.Value), 0); return err })
	o.Return, o.Outcome = w.hist.Now(), OK
	if err != nil {
		o.Outcome = Unknown
		return []Op{o}, w.finish(l, &o, f)
	}
	r := Op{Client: o.Client, Node: o.Node, Node2: o.Node2, Via: l.nodes[ri], Kind: ChanRead, File: o.File, Call: w.hist.Now()}
	buf := make([]byte, registerSize)
	var n int
	err = l.step(&r, func() error { return readAt(f.On(l.chans[ri]), buf, &n) })
	r.Return, r.Outcome, r.Value = w.hist.Now(), OK, string(buf[:n])
	if err != nil {
		r.Outcome = Failed
	}
	alive := w.finish(l, &r, f)
	return []Op{o, r}, alive
}

// isStatusErr reports whether err is an NTSTATUS answer.
func isStatusErr(err error) bool {
	var se *smbc.StatusError
	return errors.As(err, &se)
}

// isStatus reports whether err is the NTSTATUS st.
func isStatus(err error, st smb2.Status) bool {
	var se *smbc.StatusError
	return errors.As(err, &se) && se.Status == st
}
