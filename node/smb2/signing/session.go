package signing

import "crypto/cipher"

// Side is the end of a session whose point of view a Session takes: the
// server encrypts with Keys.ServerOut and decrypts with Keys.ServerIn, the
// client the other way round.
type Side int

const (
	Server Side = iota
	Client
)

// Session is one side's cryptographic state of a session once its
// authentication completes ([MS-SMB2] 3.3.5.5.3 for the server, 3.2.5.3.1
// for the client): the derived keys, the signer of the channel that
// authenticated, and — for 3.x dialects with a negotiated cipher — the two
// AEADs and the nonce source for encrypted messages.
type Session struct {
	Keys      Keys
	Signer    Signer      // signs with Keys.Signing and the connection's algorithm
	Encrypter cipher.AEAD // this side seals with it; nil without encryption
	Decrypter cipher.AEAD // this side opens with it; nil without encryption
	Nonces    *NonceSource
}

// NewSession derives a session's keys from the full session key of the
// authentication and the preauth integrity hash of the exchange (3.1.1),
// and builds the signer (signingAlg, as negotiated on the connection) and,
// where the dialect and cipherID call for them, the ciphers. It is the one
// place the server, its binding of a channel and the clients set a session
// up; a channel binding uses only its Signer.
func NewSession(side Side, dialect, cipherID, signingAlg uint16, sessionKey, preauthHash []byte) (*Session, error) {
	s := &Session{Keys: SessionKeys(dialect, cipherID, sessionKey, preauthHash)}
	var err error
	if s.Signer, err = NewSigner(signingAlg, s.Keys.Signing); err != nil {
		return nil, err
	}
	if dialect < dialect300 || cipherID == 0 {
		return s, nil
	}
	out, in := s.Keys.ServerOut, s.Keys.ServerIn
	if side == Client {
		out, in = in, out
	}
	if s.Encrypter, err = NewCipher(cipherID, out); err != nil {
		return nil, err
	}
	if s.Decrypter, err = NewCipher(cipherID, in); err != nil {
		return nil, err
	}
	s.Nonces = NewNonceSource()
	return s, nil
}
