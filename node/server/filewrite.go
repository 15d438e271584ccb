package server

import (
	"errors"
	"io"
	"syscall"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// WriteRange is what a FileWriter answers a WRITE with: write its N
// bytes to File at Off, and with Sync flush them to stable storage before
// the WRITE is answered (a write-through WRITE, [MS-SMB2] 3.3.5.13; File
// then has a Sync method). N is 0 for a WRITE of nothing.
type WriteRange struct {
	File io.WriterAt
	Off  int64
	N    int
	Sync bool
}

// syncer is a WriteRange's File that flushes to stable storage.
type syncer interface{ Sync() error }

// writeFile serves a WRITE of a FileWriter: the handle checks it and says
// where the data goes; the engine writes it — a large WRITE's payload
// spliced from the socket into the file when the file is a PipeWriter
// (splice.go), else from memory with WriteAt; for a handed-over channel,
// by the node its client is connected to (remotewrite.go) —, flushes
// them where they were written for a write-through WRITE, and the handle
// finishes.
func (r *Request) writeFile(h FileWriter, req *smb2.WriteRequest) (*smb2.WriteResponse, error) {
	wr, err := h.WriteRange(r, req)
	if err != nil {
		return nil, err
	}
	if wr.N == 0 {
		return &smb2.WriteResponse{}, nil
	}
	if !r.conn.srv.cfg.Control.Valid() {
		// Fenced since the request was read: its data must not reach the
		// file, whose opens other nodes may have taken over.
		r.conn.close()
		return nil, errFenced
	}
	var n int
	synced := false // flushed by the node that wrote it
	if r.remoteWrite != nil {
		n, synced, err = r.remoteWrite.writeTo(r, h, wr)
	} else if r.spliced != nil {
		n, err = r.spliced.WriteTo(wr.File, wr.Off)
	} else {
		n, err = wr.File.WriteAt(req.Data, wr.Off)
	}
	if err == nil && wr.Sync && !synced {
		if s, ok := wr.File.(syncer); ok {
			err = s.Sync()
		}
	}
	if err != nil {
		if errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.EINVAL) {
			return nil, smb2.StatusInvalidParameter
		}
		return nil, err
	}
	if err := h.WriteDone(req, wr.Off, n); err != nil {
		return nil, err
	}
	return &smb2.WriteResponse{Count: uint32(n)}, nil
}
