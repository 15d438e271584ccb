package service

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on administrator input.
const (
	maxNodeName     = 63
	maxShareName    = 80
	maxUserName     = 64
	maxPath         = 4096
	maxComment      = 256
	maxPassword     = 256
	maxAddresses    = 16
	defaultSMBPort  = 445
	maxHostnameSize = 253
)

// checkNodeName: lower-case letters, digits and '-', not at either end
// (a DNS label, so a node name can also be its host name).
func checkNodeName(name string) error {
	if name == "" {
		return fmt.Errorf("node name is empty")
	}
	if len(name) > maxNodeName || !isLabel(name, false) {
		return fmt.Errorf("node name %q: use 1 to %d lower-case letters, digits and '-', starting and ending with a letter or digit", name, maxNodeName)
	}
	return nil
}

// isLabel reports whether s is a DNS label; upper allows upper case.
func isLabel(s string, upper bool) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' ||
			upper && c >= 'A' && c <= 'Z'
		if !ok {
			return false
		}
	}
	return true
}

// checkName accepts letters, digits, '.', '_' and '-', starting with a
// letter or digit; dollar allows one trailing '$' (hidden shares).
func checkName(kind, name string, max int, dollar bool) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", kind)
	}
	s := name
	if dollar {
		s = strings.TrimSuffix(s, "$")
	}
	ok := len(name) <= max && s != ""
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		extra := ""
		if dollar {
			extra = ", optionally ending in '$'"
		}
		return fmt.Errorf("%s name %q: use 1 to %d letters, digits, '.', '_' and '-', starting with a letter or digit%s", kind, name, max, extra)
	}
	return nil
}

func checkShareName(name string) error {
	if err := checkName("share", name, maxShareName, true); err != nil {
		return err
	}
	if strings.EqualFold(name, "IPC$") {
		return fmt.Errorf("share name IPC$ is reserved for the server's named pipes")
	}
	return nil
}

func checkUserName(name string) error { return checkName("user", name, maxUserName, false) }

// checkPath: an absolute, clean directory path other than "/".
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("share path is empty: give the absolute directory to export")
	case len(p) > maxPath || !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return fmt.Errorf("share path: at most %d bytes of UTF-8 without NUL", maxPath)
	case !filepath.IsAbs(p):
		return fmt.Errorf("share path %q is relative: give an absolute path", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("share path %q is not clean: use %q", p, filepath.Clean(p))
	case p == "/":
		return fmt.Errorf("share path \"/\" would export the whole filesystem: give a directory")
	}
	return nil
}

// checkText checks a free-text field (comments): UTF-8, no control
// characters, at most max bytes.
func checkText(field, s string, max int) error {
	if len(s) > max || !utf8.ValidString(s) {
		return fmt.Errorf("%s: at most %d bytes of UTF-8", field, max)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s: control character %U not allowed", field, r)
		}
	}
	return nil
}

func checkPassword(pw string) error {
	if pw == "" {
		return fmt.Errorf("password is empty")
	}
	if len(pw) > maxPassword || !utf8.ValidString(pw) {
		return fmt.Errorf("password: at most %d bytes of UTF-8", maxPassword)
	}
	return nil
}

// normalizeAddresses validates SMB endpoints and returns them as
// "host:port" (port 445 if omitted), without duplicates.
func normalizeAddresses(addrs []string) ([]string, error) {
	if len(addrs) > maxAddresses {
		return nil, fmt.Errorf("%d addresses: at most %d", len(addrs), maxAddresses)
	}
	out := make([]string, 0, len(addrs))
	seen := map[string]bool{}
	for _, a := range addrs {
		n, err := normalizeAddress(a)
		if err != nil {
			return nil, err
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

func normalizeAddress(a string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("address %q: %s (want ip, ip:port, [ipv6]:port or hostname:port)", a, why)
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), strconv.Itoa(defaultSMBPort)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", bad("port must be 1 to 65535")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" || ip.IsUnspecified() || ip.IsMulticast() {
			return "", bad("not a unicast address")
		}
		return net.JoinHostPort(ip.String(), port), nil
	}
	if !isHostname(host) {
		return "", bad("not an IP address or host name")
	}
	return net.JoinHostPort(strings.ToLower(host), port), nil
}

func isHostname(h string) bool {
	if h == "" || len(h) > maxHostnameSize {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if !isLabel(label, true) {
			return false
		}
	}
	return true
}

// dialectNames maps dialect revisions ([MS-SMB2] 2.2.3) to their names.
var dialectNames = map[uint32]string{
	0x0202: "2.0.2", 0x0210: "2.1", 0x0300: "3.0", 0x0302: "3.0.2", 0x0311: "3.1.1",
}

func dialectName(d uint32) string {
	if n, ok := dialectNames[d]; ok {
		return n
	}
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("0x%04x", d)
}

// parseDialect is the inverse of dialectName; "" is 0 (default).
func parseDialect(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	for d, n := range dialectNames {
		if n == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("dialect %q: use 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1", s)
}
