package server

import (
	"context"
	"errors"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// Response is an encodable response body.
type Response interface {
	Size() int
	Encode(b []byte)
}

// PayloadResponse is a response whose bulk data (READ data, pipe output) is
// sent as its own buffer after the encoded body, without a copy.
type PayloadResponse interface {
	Response
	Payload() []byte
	// Release returns the payload buffer once the response has been written.
	Release()
}

// Request is one PDU being served. Handlers may read every field and must
// not keep the Request after they return.
type Request struct {
	Ctx    context.Context
	Header smb2.Header
	Msg    []byte // the whole PDU, header included

	Session *Session
	Tree    *Tree
	Open    *Open // set for commands that name an open, after resolution

	conn *conn
	disp disposition // how it came and is served; fixed before the handler runs
	// compound bookkeeping, owned by the serving goroutine
	compound   *compoundState
	forceSign  bool             // sign the response even though the request was not (final SESSION_SETUP)
	onEncoded  func(pdu []byte) // sees the encoded response (preauth integrity hash)
	bindSigner signingKey       // signs the response of a SESSION_SETUP with the key that verified it
	openHeld   bool             // the request holds a reference on Open
	settleLate bool             // settled by GoAsync or the answer, not by resolveOpen (order.go)
	asyncID    uint64           // set by GoAsync
	spliced    *Spliced         // a WRITE's payload still arriving (splice.go)

	readReq smb2.ReadRequest // serveRead's decoded request: no allocation of its own
	remote  *remoteRead      // a READ whose bytes another node sends (remoteread.go)
	// remoteWrite: a WRITE whose payload is on another node (remotewrite.go)
	remoteWrite *remoteWrite
	// The open whose outstanding requests count this one (channelseq.go).
	csnOpen  *Open
	csnEpoch uint64
}

// Dialect is the connection's negotiated dialect.
func (r *Request) Dialect() uint16 { return r.conn.dialect }

// DirectoryLeasing reports whether the connection negotiated
// SMB2_GLOBAL_CAP_DIRECTORY_LEASING: leases on directories are granted
// only then ([MS-SMB2] 3.3.5.9.11).
func (r *Request) DirectoryLeasing() bool {
	return r.conn != nil && r.conn.serverCaps&smb2.CapDirectoryLeasing != 0
}

// MayWait reports whether the handler may wait for the disk. It is false
// for a request served in the connection's reader, where a wait stalls
// every request behind it: there a handler that would wait returns
// ErrWouldBlock before it changes anything, and the request is served
// again on its own goroutine.
func (r *Request) MayWait() bool { return !r.disp.inline() }

// ErrWouldBlock is returned by a handler that would wait for the disk
// while MayWait is false.
var ErrWouldBlock = errors.New("server: request would block the connection's reader")

// ClientAddr is the remote address of the connection.
func (r *Request) ClientAddr() string { return r.conn.remote }

// zeroCopy reports whether a READ of n bytes may be answered with a
// SendfileResponse: the message is a lone, unencrypted PDU served in the
// connection's reader whose response will not be signed, and n reaches the
// configured threshold. (A READ handed to a goroutine because its data
// was not cached reads into a buffer: its sendfile would wait for the disk
// while holding the connection's writer.)
func (r *Request) zeroCopy(n uint32) bool {
	t := r.conn.srv.cfg.ZeroCopyThreshold
	if t <= 0 || int(n) < t || !r.disp.single() || !r.disp.inline() || r.conn.raw == nil {
		return false
	}
	if r.Session == nil || r.Session.EncryptData || r.Tree != nil && r.Tree.EncryptData {
		return false
	}
	return !r.signResponse()
}

// SendfileResponse is a READ response whose data the writer sends straight
// from a file with sendfile(2), after the encoded header and body.
type SendfileResponse interface {
	Response
	// Segment is the file descriptor, offset and length to send; the
	// descriptor stays valid until Release.
	Segment() (fd uintptr, off int64, n int)
	Release()
}

// Backend serves the file commands of one share.
type Backend interface {
	// Create serves SMB2 CREATE ([MS-SMB2] 3.3.5.9) and returns the new open's
	// handle with its response.
	Create(r *Request, req *smb2.CreateRequest) (Handle, *smb2.CreateResponse, error)
	// MaximalAccess is the access mask the session is granted on the share root.
	MaximalAccess(s *Session) uint32
}

// Handle is one open of a file, directory or pipe. The engine serializes
// nothing: handle methods can be called concurrently for the same open.
type Handle interface {
	// Close releases the open; it is called exactly once, for a CLOSE
	// request or when the tree, session or connection ends. With
	// postQuery it returns the file's attributes.
	Close(postQuery bool) (*smb2.CloseResponse, error)
}

// The optional per-command interfaces a Handle implements. A command on a
// handle that lacks the interface fails with STATUS_INVALID_DEVICE_REQUEST.
type (
	Reader interface {
		Read(r *Request, req *smb2.ReadRequest) (Response, error)
	}
	// FileReader is a handle whose READs read a file: ReadRange makes the
	// checks of a READ ([MS-SMB2] 3.3.5.12: access, byte-range locks,
	// MinimumCount) and returns the range of the file it answers with;
	// the engine decides how the bytes move (fileread.go) and reports
	// the end of what it answered with ReadDone. It is preferred to
	// Reader.
	FileReader interface {
		ReadRange(r *Request, req *smb2.ReadRequest) (FileRange, error)
		ReadDone(end int64)
	}
	Writer interface {
		Write(r *Request, req *smb2.WriteRequest) (*smb2.WriteResponse, error)
	}
	// FileWriter is a handle whose WRITEs write a file: WriteRange makes
	// the checks of a WRITE ([MS-SMB2] 3.3.5.13: access, offset,
	// byte-range locks) and says where the data goes; the engine writes
	// it (filewrite.go), then WriteDone finishes with the count written.
	// It is preferred to Writer, which gets the payload in req.Data.
	FileWriter interface {
		WriteRange(r *Request, req *smb2.WriteRequest) (WriteRange, error)
		WriteDone(req *smb2.WriteRequest, off int64, n int) error
	}
	Flusher interface {
		Flush(r *Request) error
	}
	DirQuerier interface {
		QueryDirectory(r *Request, req *smb2.QueryDirectoryRequest) (Response, error)
	}
	InfoQuerier interface {
		QueryInfo(r *Request, req *smb2.QueryInfoRequest) (Response, error)
	}
	InfoSetter interface {
		SetInfo(r *Request, req *smb2.SetInfoRequest) error
	}
	Ioctler interface {
		Ioctl(r *Request, req *smb2.IoctlRequest) (Response, error)
	}
	Locker interface {
		Lock(r *Request, req *smb2.LockRequest) error
	}
	Notifier interface {
		ChangeNotify(r *Request, req *smb2.ChangeNotifyRequest) (Response, error)
	}
)
