package server

import (
	"errors"
	"slices"

	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// Ciphers and signing algorithms in the server's order of preference.
var (
	cipherPreference  = []uint16{signing.AES128GCM, signing.AES256GCM, signing.AES128CCM, signing.AES256CCM}
	signingPreference = []uint16{signing.AESGMAC, signing.AESCMAC, signing.HMACSHA256}
)

// serveSMB1 answers the SMB1 NEGOTIATE a client sends first to learn that
// the server speaks SMB2 ([MS-SMB2] 3.3.5.3.1).
func (c *conn) serveSMB1(msg []byte) error {
	if c.negotiated || c.smb1Seen {
		return dropError{errors.New("SMB1 after negotiation")}
	}
	c.smb1Seen = true
	dialects, err := smb2.DecodeSMB1Negotiate(msg)
	if err != nil {
		return dropError{err}
	}
	dialect := uint16(0)
	_, _, minDialect, maxDialect := c.srv.effective()
	if slices.Contains(dialects, "SMB 2.???") && maxDialect > smb2.Dialect202 {
		dialect = smb2.DialectWildcard
	} else if slices.Contains(dialects, "SMB 2.002") && minDialect <= smb2.Dialect202 {
		dialect = smb2.Dialect202
	}
	if dialect == 0 {
		return dropError{errors.New("SMB1 negotiate without an SMB2 dialect")}
	}
	if err := c.credits.consume(0, 1); err != nil {
		return dropError{err}
	}
	resp := c.negotiateResponse(dialect)
	res := result{hdr: smb2.Header{Command: smb2.CmdNegotiate, Flags: smb2.FlagServerToRedir}, body: resp}
	res.hdr.Credits = c.credits.grant(1)
	if dialect == smb2.Dialect202 {
		c.setDialect(dialect)
	}
	c.writeResults([]result{res})
	return nil
}

func (c *conn) setDialect(d uint16) {
	c.dialect = d
	c.negotiated = true
}

// serveNegotiate handles SMB2 NEGOTIATE ([MS-SMB2] 3.3.5.4).
func (c *conn) serveNegotiate(r *Request) (Response, error) {
	if c.negotiated {
		return nil, dropError{errors.New("second NEGOTIATE")}
	}
	var req smb2.NegotiateRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if len(req.Dialects) == 0 {
		return nil, smb2.StatusInvalidParameter
	}
	dialect := uint16(0)
	_, _, minDialect, maxDialect := c.srv.effective()
	for _, d := range req.Dialects {
		if d >= minDialect && d <= maxDialect && d > dialect && d != smb2.DialectWildcard {
			dialect = d
		}
	}
	if dialect == 0 {
		return nil, smb2.StatusNotSupported
	}
	c.clientGUID = req.ClientGUID
	c.srv.addClientConn(c) // lease breaks: oplock.go
	c.clientCaps = req.Capabilities
	c.clientSecMode = req.SecurityMode
	c.clientDialects = req.Dialects
	resp := c.negotiateResponse(dialect)
	if dialect == smb2.Dialect311 {
		if err := c.negotiateContexts(&req, resp); err != nil {
			return nil, err
		}
		c.preauth.Update(r.Msg)
		r.onEncoded = func(pdu []byte) { c.preauth.Update(pdu) }
	} else if dialect >= smb2.Dialect300 && req.Capabilities&smb2.CapEncryption != 0 {
		resp.Capabilities |= smb2.CapEncryption
		c.cipher = signing.AES128CCM
	}
	switch {
	case dialect < smb2.Dialect300:
		c.signingAlg = signing.HMACSHA256
	case dialect < smb2.Dialect311 || !c.signingChosen:
		c.signingAlg = signing.AESCMAC
	}
	c.serverCaps = resp.Capabilities
	c.serverSecMode = resp.SecurityMode
	c.setDialect(dialect)
	return resp, nil
}

// negotiateResponse builds the response for dialect, without 3.1.1 contexts.
func (c *conn) negotiateResponse(dialect uint16) *smb2.NegotiateResponse {
	cfg := &c.srv.cfg
	resp := &smb2.NegotiateResponse{
		SecurityMode:    smb2.NegotiateSigningEnabled,
		DialectRevision: dialect,
		ServerGUID:      c.srv.guid,
		MaxTransactSize: cfg.MaxTransact,
		MaxReadSize:     cfg.MaxTransact,
		MaxWriteSize:    cfg.MaxTransact,
		SystemTime:      filetime(clock.Now()),
		SecurityBuffer:  c.authConfig().NegTokenInit(),
	}
	if required, _, _, _ := c.srv.effective(); required {
		resp.SecurityMode |= smb2.NegotiateSigningRequired
	}
	if dialect == smb2.Dialect202 {
		resp.MaxTransactSize, resp.MaxReadSize, resp.MaxWriteSize = 65536, 65536, 65536
	} else if dialect != smb2.DialectWildcard {
		resp.Capabilities |= smb2.CapLargeMTU | smb2.CapLeasing // leases: oplock.go
	}
	if dialect >= smb2.Dialect300 && dialect != smb2.DialectWildcard {
		// Persistent handles on shares with continuous availability
		// (durable.go), to clients that ask for them.
		resp.Capabilities |= c.clientCaps & smb2.CapPersistentHandles
		resp.Capabilities |= smb2.CapMultiChannel
		// Only to a client that asks for it, as Samba and Windows do: a
		// client that does not know directory leases may trip over the
		// capability (impacket's create() fails when it sees it).
		if !cfg.NoDirectoryLeases && c.clientCaps&smb2.CapDirectoryLeasing != 0 {
			resp.Capabilities |= smb2.CapDirectoryLeasing // share/dirlease.go
		}
	}
	return resp
}

// negotiateContexts selects the 3.1.1 preauth hash, cipher and signing
// algorithm and adds the response contexts ([MS-SMB2] 3.3.5.4).
func (c *conn) negotiateContexts(req *smb2.NegotiateRequest, resp *smb2.NegotiateResponse) error {
	var havePreauth bool
	for _, nc := range req.Contexts {
		switch nc.Type {
		case smb2.PreauthIntegrityCapabilities:
			var p smb2.PreauthIntegrity
			if p.Decode(nc.Data) != nil || havePreauth {
				return smb2.StatusInvalidParameter
			}
			if !slices.Contains(p.HashAlgorithms, smb2.HashSHA512) {
				return smb2.StatusSmbNoPreauthIntegrityHashOverlap
			}
			havePreauth = true
		case smb2.EncryptionCapabilities:
			var e smb2.EncryptionCaps
			if e.Decode(nc.Data) != nil {
				return smb2.StatusInvalidParameter
			}
			for _, id := range cipherPreference {
				if slices.Contains(e.Ciphers, id) {
					c.cipher = id
					break
				}
			}
			resp.Contexts = append(resp.Contexts, smb2.NegotiateContext{
				Type: smb2.EncryptionCapabilities,
				Data: (&smb2.EncryptionCaps{Ciphers: []uint16{c.cipher}}).Append(nil),
			})
		case smb2.SigningCapabilities:
			var s smb2.SigningCaps
			if s.Decode(nc.Data) != nil {
				return smb2.StatusInvalidParameter
			}
			c.signingAlg, c.signingChosen = signing.AESCMAC, true
			for _, id := range signingPreference {
				if slices.Contains(s.Algorithms, id) {
					c.signingAlg = id
					break
				}
			}
			resp.Contexts = append(resp.Contexts, smb2.NegotiateContext{
				Type: smb2.SigningCapabilities,
				Data: (&smb2.SigningCaps{Algorithms: []uint16{c.signingAlg}}).Append(nil),
			})
		}
	}
	if !havePreauth {
		return smb2.StatusInvalidParameter
	}
	salt := make([]byte, 32)
	randRead(salt)
	pre := smb2.NegotiateContext{
		Type: smb2.PreauthIntegrityCapabilities,
		Data: (&smb2.PreauthIntegrity{HashAlgorithms: []uint16{smb2.HashSHA512}, Salt: salt}).Append(nil),
	}
	resp.Contexts = append([]smb2.NegotiateContext{pre}, resp.Contexts...)
	return nil
}
