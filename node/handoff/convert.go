package handoff

import (
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// The copies between the engine's handoff types (node/server) and their
// messages (proto/smbcluster/peer/v1), each way, in one place: the
// arrival side writes what the home side reads, and back.

func handoffPB(st *server.HandoffState) *peerv1.Handoff {
	h := &peerv1.Handoff{
		Dialect: uint32(st.Dialect), ClientGuid: st.ClientGUID[:], ClientCapabilities: st.ClientCaps,
		ClientSecurityMode: uint32(st.ClientSecMode), ServerSecurityMode: uint32(st.ServerSecMode),
		ServerCapabilities: st.ServerCaps, Cipher: uint32(st.Cipher), SigningAlgorithm: uint32(st.SigningAlg),
		SigningChosen: st.SigningChosen, PreauthHash: st.Preauth[:], CreditsLow: st.CreditsLow,
		CreditsHigh: st.CreditsHigh, CreditsUsed: st.CreditsUsed, ClientAddr: st.ClientAddr,
		LocalAddr: st.LocalAddr, Node: st.Node, CreditsAtRelay: st.CreditsAtRelay,
	}
	for _, d := range st.ClientDialects {
		h.ClientDialects = append(h.ClientDialects, uint32(d))
	}
	for _, m := range st.Sessions {
		h.Sessions = append(h.Sessions, movedSessionPB(m))
	}
	return h
}

func movedSessionPB(m server.MovedSession) *peerv1.MovedSession {
	ms := &peerv1.MovedSession{
		SessionId: m.ID, User: m.User, Domain: m.Domain, Guest: m.Guest, Anonymous: m.Anonymous,
		Dialect: uint32(m.Dialect), ClientGuid: m.ClientGUID[:], Cipher: uint32(m.Cipher),
		SigningAlgorithm: uint32(m.SigningAlg), SessionKey: m.SessionKey, SigningKey: m.Keys.Signing,
		ServerInKey: m.Keys.ServerIn, ServerOutKey: m.Keys.ServerOut, ApplicationKey: m.Keys.Application,
		SigningRequired: m.SigningRequired, EncryptData: m.EncryptData, CreatedUnixNano: m.CreatedAt.UnixNano(),
		NextTree: m.NextTree, ChannelSigningAlgorithm: uint32(m.ChannelAlg), ChannelSigningKey: m.ChannelKey,
	}
	for _, t := range m.Trees {
		ms.Trees = append(ms.Trees, &peerv1.MovedTree{TreeId: t.ID, Share: t.Share, MaximalAccess: t.MaximalAccess, EncryptData: t.EncryptData})
	}
	return ms
}

func handoffOf(h *peerv1.Handoff) (*server.HandoffState, error) {
	if len(h.GetClientGuid()) != 16 || len(h.GetPreauthHash()) != 64 {
		return nil, errors.New("handoff: malformed connection state")
	}
	st := &server.HandoffState{
		Dialect: uint16(h.GetDialect()), ClientCaps: h.GetClientCapabilities(),
		ClientSecMode: uint16(h.GetClientSecurityMode()), ServerSecMode: uint16(h.GetServerSecurityMode()),
		ServerCaps: h.GetServerCapabilities(), Cipher: uint16(h.GetCipher()), SigningAlg: uint16(h.GetSigningAlgorithm()),
		SigningChosen: h.GetSigningChosen(), CreditsLow: h.GetCreditsLow(), CreditsHigh: h.GetCreditsHigh(),
		CreditsUsed: h.GetCreditsUsed(), ClientAddr: h.GetClientAddr(), LocalAddr: h.GetLocalAddr(), Node: h.GetNode(),
		CreditsAtRelay: h.GetCreditsAtRelay(),
	}
	copy(st.ClientGUID[:], h.GetClientGuid())
	copy(st.Preauth[:], h.GetPreauthHash())
	for _, d := range h.GetClientDialects() {
		st.ClientDialects = append(st.ClientDialects, uint16(d))
	}
	for _, ms := range h.GetSessions() {
		m, err := movedSessionOf(ms)
		if err != nil {
			return nil, err
		}
		st.Sessions = append(st.Sessions, m)
	}
	return st, nil
}

func movedSessionOf(ms *peerv1.MovedSession) (server.MovedSession, error) {
	m := server.MovedSession{
		ID: ms.GetSessionId(), User: ms.GetUser(), Domain: ms.GetDomain(), Guest: ms.GetGuest(), Anonymous: ms.GetAnonymous(),
		Dialect: uint16(ms.GetDialect()), Cipher: uint16(ms.GetCipher()), SigningAlg: uint16(ms.GetSigningAlgorithm()),
		SessionKey: ms.GetSessionKey(), SigningRequired: ms.GetSigningRequired(), EncryptData: ms.GetEncryptData(),
		CreatedAt: time.Unix(0, ms.GetCreatedUnixNano()), NextTree: ms.GetNextTree(),
		ChannelAlg: uint16(ms.GetChannelSigningAlgorithm()), ChannelKey: ms.GetChannelSigningKey(),
	}
	m.Keys.Signing, m.Keys.ServerIn, m.Keys.ServerOut, m.Keys.Application = ms.GetSigningKey(), ms.GetServerInKey(), ms.GetServerOutKey(), ms.GetApplicationKey()
	if copy(m.ClientGUID[:], ms.GetClientGuid()) != 16 {
		return m, errors.New("handoff: malformed moved session")
	}
	for _, t := range ms.GetTrees() {
		m.Trees = append(m.Trees, server.MovedTree{ID: t.GetTreeId(), Share: t.GetShare(), MaximalAccess: t.GetMaximalAccess(), EncryptData: t.GetEncryptData()})
	}
	return m, nil
}

func remoteReadPB(rr server.RemoteRead) *peerv1.RemoteReadResponse {
	return &peerv1.RemoteReadResponse{
		Forward: rr.Forward, Answered: rr.Answered, Head: rr.Head, Inode: rr.Inode,
		Offset: rr.Off, Length: uint32(rr.N), SigningAlgorithm: uint32(rr.SignAlg), SigningKey: rr.SignKey, Seal: rr.Seal,
	}
}

func remoteReadOf(resp *peerv1.RemoteReadResponse) server.RemoteRead {
	return server.RemoteRead{
		Forward: resp.GetForward(), Answered: resp.GetAnswered(), Head: resp.GetHead(),
		Inode: resp.GetInode(), Off: resp.GetOffset(), N: int(resp.GetLength()),
		SignAlg: uint16(resp.GetSigningAlgorithm()), SignKey: resp.GetSigningKey(), Seal: resp.GetSeal(),
	}
}

func remoteFilePB(n server.RemoteFileName) *peerv1.RemoteFileResponse {
	return &peerv1.RemoteFileResponse{Ok: n.OK, Share: n.Share, Path: n.Path, FileId: n.ID, Mount: n.Mount}
}

func remoteFileOf(resp *peerv1.RemoteFileResponse) server.RemoteFileName {
	return server.RemoteFileName{OK: resp.GetOk(), Share: resp.GetShare(), Path: resp.GetPath(), ID: resp.GetFileId(), Mount: resp.GetMount()}
}

func sessionKeysPB(k server.SessionKeys) *peerv1.SessionKeysResponse {
	return &peerv1.SessionKeysResponse{Ok: k.OK, Dialect: uint32(k.Dialect), Cipher: uint32(k.Cipher),
		ServerInKey: k.ServerIn, ServerOutKey: k.ServerOut,
		ChannelSigningAlgorithm: uint32(k.ChannelAlg), ChannelSigningKey: k.ChannelKey}
}

func sessionKeysOf(resp *peerv1.SessionKeysResponse) server.SessionKeys {
	return server.SessionKeys{OK: resp.GetOk(), Dialect: uint16(resp.GetDialect()), Cipher: uint16(resp.GetCipher()),
		ServerIn: resp.GetServerInKey(), ServerOut: resp.GetServerOutKey(),
		ChannelAlg: uint16(resp.GetChannelSigningAlgorithm()), ChannelKey: resp.GetChannelSigningKey()}
}

// writeStepOf is the home node's step of a RemoteWrite (service.go sends
// them, one message each).
func writeStepOf(m *peerv1.RemoteWriteMessage) writeStep {
	return writeStep{
		Write: m.GetWrite(), Inode: m.GetInode(), Off: m.GetOffset(), N: int(m.GetLength()), Sync: m.GetSync(),
		SendData: m.GetSendData(), Answered: m.GetAnswered(), Forward: m.GetForward(),
	}
}
