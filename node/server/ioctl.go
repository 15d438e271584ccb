package server

import (
	"encoding/binary"
	"net"
	"slices"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// bytesResponse is an IOCTL response with its output buffer.
func ioctlResponse(req *smb2.IoctlRequest, out []byte) *smb2.IoctlResponse {
	return &smb2.IoctlResponse{CtlCode: req.CtlCode, FileID: req.FileID, Output: out}
}

// serveIoctl handles SMB2 IOCTL ([MS-SMB2] 3.3.5.15): the FSCTLs about the
// connection here, the rest by the open's handle.
func (c *conn) serveIoctl(r *Request) (Response, error) {
	var req smb2.IoctlRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if req.Flags != smb2.IoctlIsFsctl {
		return nil, smb2.StatusNotSupported
	}
	switch req.CtlCode {
	case smb2.FsctlValidateNegotiateInfo, smb2.FsctlQueryNetworkInterfaceInfo,
		smb2.FsctlDfsGetReferrals, smb2.FsctlDfsGetReferralsEx:
		if req.FileID != smb2.AnyFileID {
			return nil, smb2.StatusInvalidParameter // these name no file ([MS-SMB2] 3.3.5.15)
		}
	}
	switch req.CtlCode {
	case smb2.FsctlValidateNegotiateInfo:
		return c.validateNegotiate(r, &req)
	case smb2.FsctlQueryNetworkInterfaceInfo:
		return c.queryInterfaces(&req)
	case smb2.FsctlDfsGetReferrals, smb2.FsctlDfsGetReferralsEx:
		return nil, smb2.StatusNotFound
	case smb2.FsctlSmbtortureForceUnackedTimeout:
		return c.forceUnackedTimeout(&req) // ioctl_torture.go
	}
	if r.Open == nil {
		return nil, smb2.StatusFileClosed // openlessIoctl let it through
	}
	h, ok := r.Open.Handle.(Ioctler)
	if !ok {
		return nil, smb2.StatusInvalidDeviceRequest
	}
	return h.Ioctl(r, &req)
}

// openlessIoctl reports whether an IOCTL request body is one the command
// table passes on without resolving its FileId: the FSCTLs about the
// connection (which must name no file) and the requests serveIoctl
// refuses first.
func openlessIoctl(body []byte) bool {
	if binary.LittleEndian.Uint32(body[48:]) != smb2.IoctlIsFsctl {
		return true
	}
	switch binary.LittleEndian.Uint32(body[4:]) {
	case smb2.FsctlValidateNegotiateInfo, smb2.FsctlQueryNetworkInterfaceInfo,
		smb2.FsctlDfsGetReferrals, smb2.FsctlDfsGetReferralsEx, smb2.FsctlSmbtortureForceUnackedTimeout:
		return true
	}
	return false
}

// validateNegotiate checks that the negotiation was not tampered with
// ([MS-SMB2] 3.3.5.15.12); a mismatch drops the connection.
func (c *conn) validateNegotiate(r *Request, req *smb2.IoctlRequest) (Response, error) {
	if c.dialect == smb2.Dialect311 {
		return nil, dropError{errValidateNegotiate}
	}
	var v fscc.ValidateNegotiateInfoRequest
	if err := v.Decode(req.Input); err != nil {
		return nil, dropError{errValidateNegotiate}
	}
	if v.Capabilities != c.clientCaps || v.GUID != c.clientGUID || v.SecurityMode != c.clientSecMode ||
		!slices.Equal(v.Dialects, c.clientDialects) {
		return nil, dropError{errValidateNegotiate}
	}
	out := fscc.ValidateNegotiateInfoResponse{
		Capabilities: c.serverCaps, GUID: c.srv.guid, SecurityMode: c.serverSecMode, Dialect: c.dialect,
	}
	b := make([]byte, out.Size())
	out.Encode(b)
	return ioctlResponse(req, b), nil
}

// queryInterfaces lists the node's addresses for multichannel
// ([MS-SMB2] 3.3.5.15.11).
func (c *conn) queryInterfaces(req *smb2.IoctlRequest) (Response, error) {
	var ifs []fscc.NetworkInterfaceInfo
	for _, i := range c.srv.interfaces() {
		capab := uint32(0)
		if i.RSS {
			capab |= fscc.RSSCapable
		}
		ifs = append(ifs, fscc.NetworkInterfaceInfo{IfIndex: i.Index, Capability: capab, LinkSpeed: i.LinkSpeed, IP: i.IP})
	}
	out := fscc.EncodeNetworkInterfaces(ifs)
	if uint32(len(out)) > req.MaxOutputResponse {
		return nil, smb2.StatusBufferTooSmall
	}
	return ioctlResponse(req, out), nil
}

// interfaces returns the configured interfaces, or one per listener address.
func (s *Server) interfaces() []Interface {
	if ifs, ok := s.cfg.Control.offered(); ok {
		return ifs
	}
	if len(s.cfg.Interfaces) > 0 {
		return s.cfg.Interfaces
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Interface
	idx := uint32(1)
	for l := range s.listeners {
		ta, ok := l.Addr().(*net.TCPAddr)
		if !ok || ta.IP.IsUnspecified() {
			continue
		}
		out = append(out, Interface{Index: idx, IP: ta.IP, LinkSpeed: 10_000_000_000, RSS: true})
		idx++
	}
	return out
}
