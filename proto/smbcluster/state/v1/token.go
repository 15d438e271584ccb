package statev1

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// JoinTokenPrefix starts every join token, so a token is recognisable in a
// configuration file or a leaked log.
const JoinTokenPrefix = "smbjoin1_"

// NewJoinToken returns a fresh join token: JoinTokenPrefix and 32 random
// bytes in unpadded base64url.
func NewJoinToken() string {
	var b [32]byte
	rand.Read(b[:])
	return JoinTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashJoinToken is what NodeRecord.JoinTokenSha256 stores for token.
func HashJoinToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CheckJoinToken reports whether token hashes to hash, in constant time.
func CheckJoinToken(token string, hash []byte) bool {
	return len(hash) == sha256.Size &&
		subtle.ConstantTimeCompare(HashJoinToken(token), hash) == 1
}
