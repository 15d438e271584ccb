// Package devtoken gives a development coordinator (smbcoord
// --dev-loopback-insecure, and `make run`'s deploy/localcluster) an admin
// token that only the user who started it can read, and publishes it where
// that user's smbctl finds it without flags:
//
//	$XDG_CONFIG_HOME/smbctl/dev/HOST:PORT.token   (default ~/.config/smbctl/dev/...)
//
// a symlink to the token file in the run directory, named after the
// coordinator's listening address. smbctl (cli/command) reads that path
// when it has no other token for a loopback endpoint; the two sides share
// the layout, not code.
//
// Invariant: a token file is written mode 0600 as a new file renamed into
// place (never by rewriting a file another user may have opened), links
// are made only in a configuration directory that belongs to the user the
// coordinator runs as, and a link is removed only while it still points at
// this coordinator's token file.
package devtoken
