package signing

import "crypto/sha512"

// PreauthHash is the SHA-512 preauth integrity hash value of [MS-SMB2]
// 3.3.5.4 and 3.3.5.5 (Connection.PreauthIntegrityHashValue and
// PreauthSession.PreauthIntegrityHashValue). Its zero value is the initial
// all-zero value.
type PreauthHash [64]byte

// Update sets h to SHA-512(h || msg...), where msg is one whole SMB2 message
// (header included) given as one or more parts ([MS-SMB2] 3.3.5.4).
func (h *PreauthHash) Update(msg ...[]byte) {
	d := sha512.New()
	d.Write(h[:])
	for _, p := range msg {
		d.Write(p)
	}
	d.Sum(h[:0])
}
