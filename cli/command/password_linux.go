package command

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// readTerminalSecret prints prompt on w and reads a line from the
// terminal in with echo turned off, restoring the terminal afterwards.
func readTerminalSecret(in *os.File, w io.Writer, prompt string) (string, error) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", fmt.Errorf("reading the terminal's settings: %v (use --password-stdin)", err)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", fmt.Errorf("turning off echo: %v (use --password-stdin)", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	fmt.Fprint(w, prompt)
	line, err := bufio.NewReader(in).ReadString('\n')
	fmt.Fprintln(w)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
