package server

import (
	"strings"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// serveTreeConnect handles SMB2 TREE_CONNECT ([MS-SMB2] 3.3.5.7).
func (c *conn) serveTreeConnect(r *Request) (Response, error) {
	var req smb2.TreeConnectRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	name, ok := shareName(req.Path)
	if !ok {
		return nil, smb2.StatusBadNetworkName
	}
	sh, ok := c.srv.cfg.Shares.Lookup(name)
	if !ok {
		return nil, smb2.StatusBadNetworkName
	}
	if !sh.Pipe && c.srv.cfg.Control.NetNameOffline() {
		return nil, smb2.StatusNetworkNameDeleted
	}
	s := r.Session
	encrypt := sh.Encrypt || s.EncryptData
	if sh.Encrypt && s.encrypter == nil && !sh.Pipe {
		// The share requires encryption and this session cannot encrypt
		// (RejectUnencryptedAccess, [MS-SMB2] 3.3.5.7).
		return nil, smb2.StatusAccessDenied
	}
	t := &Tree{Session: s, Share: sh, EncryptData: encrypt && s.encrypter != nil, opens: map[uint64]*Open{}, met: c.srv.cfg.Metrics.Share(sh.Name)}
	resp := &smb2.TreeConnectResponse{}
	if sh.Pipe {
		resp.ShareType = smb2.ShareTypePipe
		t.MaximalAccess = 0x001f01ff
	} else {
		resp.ShareType = smb2.ShareTypeDisk
		resp.ShareFlags = smb2.ShareFlagManualCaching
		t.MaximalAccess = sh.Backend.MaximalAccess(s)
	}
	if t.EncryptData {
		resp.ShareFlags |= smb2.ShareFlagEncryptData
	}
	if sh.CA && !sh.Pipe && r.conn.dialect >= smb2.Dialect300 {
		resp.Capabilities |= smb2.ShareCapContinuousAvailability
	}
	if c.srv.cfg.Cluster && !sh.Pipe && r.conn.dialect >= smb2.Dialect300 {
		resp.Capabilities |= smb2.ShareCapCluster
	}
	resp.MaximalAccess = t.MaximalAccess
	s.mu.Lock()
	s.nextTree++
	t.ID = s.nextTree
	s.trees[t.ID] = t
	s.mu.Unlock()
	r.Tree = t
	return resp, nil
}

// shareName extracts SHARE from \\server\SHARE.
func shareName(path string) (string, bool) {
	p := strings.TrimPrefix(path, `\\`)
	i := strings.IndexByte(p, '\\')
	if i < 0 || i == len(p)-1 || strings.ContainsRune(p[i+1:], '\\') {
		return "", false
	}
	return p[i+1:], true
}

// serveTreeDisconnect handles SMB2 TREE_DISCONNECT ([MS-SMB2] 3.3.5.8).
func (c *conn) serveTreeDisconnect(r *Request) (Response, error) {
	if err := (&smb2.TreeDisconnectRequest{}).Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	s := r.Session
	s.mu.Lock()
	delete(s.trees, r.Tree.ID)
	s.mu.Unlock()
	c.srv.closeTree(r.Tree)
	return &smb2.TreeDisconnectResponse{}, nil
}
