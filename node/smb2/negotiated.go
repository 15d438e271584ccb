package smb2

import "fmt"

// Negotiated returns what a client signs and encrypts with after the
// server's NEGOTIATE response r ([MS-SMB2] 3.2.5.2): HMAC-SHA256 for the
// 2.x dialects; AES-CMAC from 3.0, with AES-128-CCM when 3.0 or 3.0.2
// advertise encryption; for 3.1.1 the single cipher and signing algorithm
// of its negotiate contexts, if any (cipher 0: none). A context that does
// not name exactly one is ErrMalformed.
func (r *NegotiateResponse) Negotiated() (signingAlg, cipher uint16, err error) {
	switch {
	case r.DialectRevision < Dialect300:
		return SigningHMACSHA256, 0, nil
	case r.DialectRevision < Dialect311:
		if r.Capabilities&CapEncryption != 0 {
			cipher = CipherAES128CCM
		}
		return SigningAESCMAC, cipher, nil
	}
	signingAlg = SigningAESCMAC
	for _, ctx := range r.Contexts {
		switch ctx.Type {
		case EncryptionCapabilities:
			var ec EncryptionCaps
			if err := ec.Decode(ctx.Data); err != nil || len(ec.Ciphers) != 1 {
				return 0, 0, fmt.Errorf("%w: encryption capabilities %x", ErrMalformed, ctx.Data)
			}
			cipher = ec.Ciphers[0]
		case SigningCapabilities:
			var sc SigningCaps
			if err := sc.Decode(ctx.Data); err != nil || len(sc.Algorithms) != 1 {
				return 0, 0, fmt.Errorf("%w: signing capabilities %x", ErrMalformed, ctx.Data)
			}
			signingAlg = sc.Algorithms[0]
		}
	}
	return signingAlg, cipher, nil
}

// DialectName is the dotted name of a dialect ("3.1.1"), or its number
// in hex for one this package does not know.
func DialectName(d uint16) string {
	switch d {
	case Dialect202:
		return "2.0.2"
	case Dialect210:
		return "2.1"
	case Dialect300:
		return "3.0"
	case Dialect302:
		return "3.0.2"
	case Dialect311:
		return "3.1.1"
	}
	return fmt.Sprintf("%#04x", d)
}
