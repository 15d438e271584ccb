//go:build !linux

package command

import (
	"errors"
	"io"
	"os"
)

// readTerminalSecret is not implemented here: echo cannot be turned off.
func readTerminalSecret(in *os.File, w io.Writer, prompt string) (string, error) {
	return "", errors.New("cannot prompt without echo on this system: use --password-stdin")
}
