package smbc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// Access masks, dispositions and options of the opens this client makes
// ([MS-SMB2] 2.2.13, [MS-FSCC] 2.4.54 for the information class).
const (
	accessReadWrite   = 0x0012019F // GENERIC_READ | GENERIC_WRITE as file rights
	accessDelete      = 0x00010000
	shareAll          = 0x7
	fileOpen          = 1
	fileOpenIf        = 3
	optNonDirectory   = 0x00000040
	optDeleteOnClose  = 0x00001000
	attrNormal        = 0x80
	impersonation     = 2
	fileStandardInfo  = 5 // FileStandardInformation
	fileStandardSize  = 24
	readRequestBody   = 49 // StructureSize, with the one byte of Buffer
	writeRequestFixed = smb2.WriteRequestFixedSize
)

// File is an open file. Its methods are safe for concurrent use.
type File struct {
	c  *Conn
	id smb2.FileID
	// writeFlags are the WRITEs' Flags (SMB2_WRITEFLAG_*).
	writeFlags uint32
}

// WriteThrough returns the open f whose WRITEs ask the server to have the
// data on stable storage before it answers (SMB2_WRITEFLAG_WRITE_THROUGH,
// dialect 2.1 and later).
func (f *File) WriteThrough() *File {
	g := *f
	g.writeFlags |= smb2.WriteFlagWriteThrough
	return &g
}

// OpenFile opens name (share-relative) for reading and writing, creating it
// when create is set.
func (c *Conn) OpenFile(name string, create bool) (*File, error) {
	disp := uint32(fileOpen)
	if create {
		disp = fileOpenIf
	}
	resp, err := c.create(name, accessReadWrite, disp, optNonDirectory)
	if err != nil {
		return nil, err
	}
	return &File{c: c, id: resp.FileID}, nil
}

// Remove deletes name: it is opened delete-on-close and closed.
func (c *Conn) Remove(name string) error {
	resp, err := c.create(name, accessDelete, fileOpen, optNonDirectory|optDeleteOnClose)
	if err != nil {
		return err
	}
	return c.closeFile(resp.FileID)
}

// OpenDelete opens name (which must exist) for reading and deleting,
// delete-on-close, sharing share (FILE_SHARE_* bits): the file is
// deleted when the open is closed — by Close, or by the server when the
// connection is lost.
func (c *Conn) OpenDelete(name string, share uint32) (*File, error) {
	resp, err := c.createShared(name, accessDelete|accessRead, share, fileOpen, optNonDirectory|optDeleteOnClose)
	if err != nil {
		return nil, err
	}
	return &File{c: c, id: resp.FileID}, nil
}

// Rename renames the open file to name (share-relative), replacing a
// file of that name when replace is set (SET_INFO FileRenameInformation,
// [MS-SMB2] 2.2.39). The open needs DELETE access.
func (f *File) Rename(name string, replace bool) error {
	info := fscc.RenameInformation{ReplaceIfExists: replace, FileName: name}
	buf := make([]byte, info.Size())
	info.Encode(buf)
	cl := f.c.newCall(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile,
		FileInfoClass: fscc.FileRenameInformation, Buffer: buf, FileID: f.id})
	defer cl.release()
	if err := f.c.do(cl, f.c.creditCharge(0)); err != nil {
		return fmt.Errorf("rename to %s: %w", name, err)
	}
	return nil
}

// OpenMode opens name (share-relative) with access (an access mask:
// smb2.GenericRead …) and share (FILE_SHARE_* bits), creating it when
// create is set, without an oplock or lease: the opens whose share modes
// conflict ([MS-FSA] 2.1.5.1.2), which a sharing violation refuses.
func (c *Conn) OpenMode(name string, access, share uint32, create bool) (*File, error) {
	disp := uint32(fileOpen)
	if create {
		disp = fileOpenIf
	}
	resp, err := c.createShared(name, access, share, disp, optNonDirectory)
	if err != nil {
		return nil, err
	}
	return &File{c: c, id: resp.FileID}, nil
}

func (c *Conn) create(name string, access, disp, opts uint32) (*smb2.CreateResponse, error) {
	return c.createShared(name, access, shareAll, disp, opts)
}

func (c *Conn) createShared(name string, access, share, disp, opts uint32) (*smb2.CreateResponse, error) {
	cl := c.newCall(smb2.CmdCreate, &smb2.CreateRequest{ImpersonationLevel: impersonation, DesiredAccess: access,
		FileAttributes: attrNormal, ShareAccess: share, CreateDisposition: disp, CreateOptions: opts, Name: name})
	defer cl.release()
	if err := c.do(cl, c.creditCharge(0)); err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	var resp smb2.CreateResponse
	if err := resp.Decode(cl.resp); err != nil {
		return nil, fmt.Errorf("%w: CREATE: %v", ErrProtocol, err)
	}
	return &resp, nil
}

func (c *Conn) closeFile(id smb2.FileID) error {
	req := smb2.CloseRequest{FileID: id}
	cl, b := newRawCall(smb2.CmdClose, req.Size())
	req.Encode(b) // not through newCall's interface: req stays on the stack
	defer cl.release()
	return c.do(cl, c.creditCharge(0))
}

// Close closes the file.
func (f *File) Close() error { return f.c.closeFile(f.id) }

// Size returns the file's EndOfFile.
func (f *File) Size() (int64, error) {
	c := f.c
	cl := c.newCall(smb2.CmdQueryInfo, &smb2.QueryInfoRequest{InfoType: smb2.InfoFile,
		FileInfoClass: fileStandardInfo, OutputBufferLength: fileStandardSize, FileID: f.id})
	defer cl.release()
	if err := c.do(cl, c.creditCharge(fileStandardSize)); err != nil {
		return 0, err
	}
	var resp smb2.QueryInfoResponse
	if err := resp.Decode(cl.resp); err != nil || len(resp.Buffer) < 16 {
		return 0, fmt.Errorf("%w: QUERY_INFO", ErrProtocol)
	}
	return int64(binary.LittleEndian.Uint64(resp.Buffer[8:])), nil
}

// ReadAt reads len(b) bytes at off, in pieces of at most the server's
// MaxReadSize. Fewer bytes come with io.EOF.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	c := f.c
	done := 0
	for done < len(b) {
		n := min(len(b)-done, int(c.maxRead))
		cl := c.readCall(f.id, off+int64(done), b[done:done+n])
		err := c.do(cl, c.creditCharge(n))
		got := cl.n
		cl.release()
		if err != nil {
			if isStatus(err, smb2.StatusEndOfFile) {
				return done, io.EOF
			}
			return done, err
		}
		c.stats.reads.Add(1)
		c.stats.readBytes.Add(int64(got))
		done += got
		if got < n {
			return done, io.EOF
		}
	}
	return done, nil
}

// readCall builds a READ of len(dst) bytes at off whose data lands in dst.
func (c *Conn) readCall(id smb2.FileID, off int64, dst []byte) *call {
	cl, b := newRawCall(smb2.CmdRead, readRequestBody)
	clear(b)
	binary.LittleEndian.PutUint16(b, 49)
	b[2] = smb2.ReadResponseDataOffset // Padding: where the data should start
	binary.LittleEndian.PutUint32(b[4:], uint32(len(dst)))
	binary.LittleEndian.PutUint64(b[8:], uint64(off))
	id.Encode(b[16:])
	cl.dst = dst
	return cl
}

// WriteAt writes b at off, in pieces of at most the server's MaxWriteSize.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	c := f.c
	done := 0
	for done < len(b) {
		n := min(len(b)-done, int(c.maxWrite))
		cl := c.writeCall(f.id, off+int64(done), b[done:done+n], f.writeFlags)
		err := c.do(cl, c.creditCharge(n))
		var count int
		if err == nil {
			if len(cl.resp) < smb2.HeaderSize+8 {
				err = fmt.Errorf("%w: WRITE response", ErrProtocol)
			} else {
				count = int(binary.LittleEndian.Uint32(cl.resp[smb2.HeaderSize+4:]))
			}
		}
		cl.release()
		if err != nil {
			return done, err
		}
		c.stats.writes.Add(1)
		c.stats.writeBytes.Add(int64(min(count, n)))
		if count != n {
			return done + min(count, n), io.ErrShortWrite
		}
		done += n
	}
	return done, nil
}

// writeCall builds a WRITE of data at off; data is sent from where it is.
func (c *Conn) writeCall(id smb2.FileID, off int64, data []byte, flags uint32) *call {
	cl, b := newRawCall(smb2.CmdWrite, writeRequestFixed)
	clear(b)
	binary.LittleEndian.PutUint16(b, 49)
	binary.LittleEndian.PutUint16(b[2:], smb2.HeaderSize+writeRequestFixed) // DataOffset
	binary.LittleEndian.PutUint32(b[4:], uint32(len(data)))
	binary.LittleEndian.PutUint64(b[8:], uint64(off))
	id.Encode(b[16:])
	binary.LittleEndian.PutUint32(b[44:], flags)
	cl.payload = data
	return cl
}

// isStatus reports whether err is a *StatusError with status st.
func isStatus(err error, st smb2.Status) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == st
}
