package share

import (
	"errors"
	"sync"

	"github.com/smbcluster/smbcluster/node/ipc"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// IPC is the Backend of the IPC$ share: every open is a named pipe.
type IPC struct {
	env *ipc.Env
}

// NewIPC returns the IPC$ backend; env describes the server to the pipes.
func NewIPC(env *ipc.Env) *IPC { return &IPC{env: env} }

// MaximalAccess implements server.Backend.
func (p *IPC) MaximalAccess(*server.Session) uint32 { return fullAccess }

// Create opens a named pipe ([MS-SMB2] 3.3.5.9 on a pipe share).
func (p *IPC) Create(r *server.Request, req *smb2.CreateRequest) (server.Handle, *smb2.CreateResponse, error) {
	pp, err := ipc.Open(req.Name, p.env)
	if err != nil {
		return nil, nil, smb2.StatusObjectNameNotFound
	}
	resp := &smb2.CreateResponse{
		CreateAction:   smb2.FileOpened,
		FileAttributes: 0x80, // FILE_ATTRIBUTE_NORMAL
	}
	return &pipeOpen{p: pp, name: req.Name}, resp, nil
}

// pipeOpen is one open of a named pipe. The pipe is used by one request at
// a time.
type pipeOpen struct {
	name string
	mu   sync.Mutex
	p    ipc.Pipe
}

func (o *pipeOpen) Close(bool) (*smb2.CloseResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return &smb2.CloseResponse{}, o.p.Close()
}

// pipeStatus maps ipc errors to NTSTATUS.
func pipeStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ipc.ErrPipeEmpty):
		return smb2.StatusPipeEmpty
	case errors.Is(err, ipc.ErrPipeBusy):
		return smb2.StatusPipeBusy
	case errors.Is(err, ipc.ErrClosed):
		return smb2.StatusFileClosed
	}
	return smb2.StatusPipeBroken
}

// pipeData is a READ response carrying pipe output.
type pipeData struct {
	smb2.ReadResponse
	data []byte
}

func (r *pipeData) Payload() []byte { return r.data }
func (r *pipeData) Release()        {}

// Read handles SMB2 READ on a pipe.
func (o *pipeOpen) Read(r *server.Request, req *smb2.ReadRequest) (server.Response, error) {
	o.mu.Lock()
	data, more, err := o.p.Read(int(req.Length))
	o.mu.Unlock()
	if err != nil {
		return nil, pipeStatus(err)
	}
	resp := &pipeData{ReadResponse: smb2.ReadResponse{DataOffset: 0x50, DataLength: uint32(len(data))}, data: data}
	if more {
		return resp, smb2.StatusBufferOverflow
	}
	return resp, nil
}

// Write handles SMB2 WRITE on a pipe.
func (o *pipeOpen) Write(r *server.Request, req *smb2.WriteRequest) (*smb2.WriteResponse, error) {
	o.mu.Lock()
	n, err := o.p.Write(req.Data)
	o.mu.Unlock()
	if err != nil {
		return nil, pipeStatus(err)
	}
	return &smb2.WriteResponse{Count: uint32(n)}, nil
}

// Ioctl handles FSCTL_PIPE_TRANSCEIVE ([MS-SMB2] 3.3.5.15.1).
func (o *pipeOpen) Ioctl(r *server.Request, req *smb2.IoctlRequest) (server.Response, error) {
	if req.CtlCode != smb2.FsctlPipeTransceive {
		return nil, smb2.StatusNotSupported
	}
	o.mu.Lock()
	out, more, err := o.p.Transceive(req.Input, int(req.MaxOutputResponse))
	o.mu.Unlock()
	if err != nil {
		return nil, pipeStatus(err)
	}
	resp := &smb2.IoctlResponse{CtlCode: req.CtlCode, FileID: req.FileID, Output: out}
	if more {
		return resp, smb2.StatusBufferOverflow
	}
	return resp, nil
}

// QueryInfo answers FileStandardInformation (and a few others) for pipes.
func (o *pipeOpen) QueryInfo(r *server.Request, req *smb2.QueryInfoRequest) (server.Response, error) {
	if req.InfoType != smb2.InfoFile {
		return nil, smb2.StatusNotSupported
	}
	var info interface {
		Size() int
		Encode([]byte)
	}
	switch req.FileInfoClass {
	case fscc.FileStandardInformation:
		info = &fscc.StandardInformation{AllocationSize: 4096, NumberOfLinks: 1, DeletePending: true}
	default:
		return nil, smb2.StatusInvalidInfoClass
	}
	if uint32(info.Size()) > req.OutputBufferLength {
		return nil, smb2.StatusInfoLengthMismatch
	}
	b := make([]byte, info.Size())
	info.Encode(b)
	return &smb2.QueryInfoResponse{Buffer: b}, nil
}
