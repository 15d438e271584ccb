// Package auth authenticates SMB sessions: the server side of Kerberos 5
// ([RFC4121], [MS-KILE]; the protocol itself is gokrb5's) and of NTLMSSP
// with NTLMv2 ([MS-NLMP]), carried in SPNEGO ([MS-SPNG], RFC 4178), as the
// SMB server runs it from SESSION_SETUP.
//
// A Context holds one authentication exchange. The SMB server feeds it each
// client security buffer and sends back whatever Step returns; when Step
// returns nil the session is established and Result describes it.
//
// Invariant: Step reports success only when the client proved knowledge of
// the user's NT hash with an NTLMv2 response (and, when it sent one, a valid
// MIC and mechListMIC), or presented a Kerberos ticket for an accepted
// service principal that the keytab decrypts, valid now, with a fresh
// authenticator, for a principal that maps to a user, or when Config
// explicitly allows a guest or anonymous session. Every decoder here (NTLMSSP messages, AV pairs, DER) validates each
// length and offset against its whole input and never panics on any input.
package auth
