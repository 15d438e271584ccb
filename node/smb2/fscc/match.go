package fscc

import (
	"strings"
	"unicode"
)

// Wildcards of [MS-FSA] 2.1.4.4. The DOS forms are what Windows clients put
// on the wire after translating "*.", "?" and "." ahead of wildcards.
const (
	dosStar = '<' // DOS_STAR
	dosQM   = '>' // DOS_QM
	dosDot  = '"' // DOS_DOT
)

// HasWildcards reports whether s contains any of * ? < > " ([MS-FSA] 2.1.4.3).
func HasWildcards(s string) bool { return strings.ContainsAny(s, `*?<>"`) }

// Match reports whether name matches pattern under the rules of
// FsRtlIsNameInExpression ([MS-FSA] 2.1.4.4):
//
//   - zero or more characters
//     ?   exactly one character
//     <   (DOS_STAR) zero or more characters, never consuming the name's final '.'
//     >   (DOS_QM) one character; at a '.' or the end of the name, the whole
//     run of contiguous DOS_QMs matches nothing
//     "   (DOS_DOT) a '.', or nothing at the end of the name
//
// "*" and "*.*" match every non-empty name; an empty name matches only an
// empty pattern. With caseInsensitive, characters compare by simple Unicode
// upper-casing.
func Match(pattern, name string, caseInsensitive bool) bool {
	switch {
	case name == "" || pattern == "":
		return name == pattern
	case pattern == "*" || pattern == "*.*":
		return true
	case !HasWildcards(pattern):
		if caseInsensitive {
			return equalFold(pattern, name)
		}
		return pattern == name
	}
	p, n := []rune(pattern), []rune(name)
	if caseInsensitive {
		upper(p)
		upper(n)
	}
	return matchRunes(p, n)
}

func upper(r []rune) {
	for i, c := range r {
		r[i] = unicode.ToUpper(c)
	}
}

func equalFold(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	if len(ar) != len(br) {
		return false
	}
	for i := range ar {
		if ar[i] != br[i] && unicode.ToUpper(ar[i]) != unicode.ToUpper(br[i]) {
			return false
		}
	}
	return true
}

// matchRunes simulates the expression as an NFA whose states are positions
// in p (len(p) is the accepting state); every transition moves forward or
// stays, so closures are computed in one ascending pass.
func matchRunes(p, n []rune) bool {
	var buf [2 * 64]bool
	var cur, next []bool
	if len(p)+1 <= 64 {
		cur, next = buf[:len(p)+1], buf[64:64+len(p)+1]
	} else {
		cur, next = make([]bool, len(p)+1), make([]bool, len(p)+1)
	}
	lastDot := -1
	for i, c := range n {
		if c == '.' {
			lastDot = i
		}
	}
	cur[0] = true
	for i := 0; ; i++ {
		atEnd := i == len(n)
		var c rune
		if !atEnd {
			c = n[i]
		}
		closure(p, cur, atEnd, c)
		if atEnd {
			return cur[len(p)]
		}
		clear(next)
		alive := false
		for s := 0; s < len(p); s++ {
			if !cur[s] {
				continue
			}
			switch e := p[s]; e {
			case '*':
				next[s] = true
			case dosStar:
				if c != '.' || i != lastDot {
					next[s] = true
				}
			case '?':
				next[s+1] = true
			case dosQM:
				if c != '.' {
					next[s+1] = true
				}
			case dosDot:
				if c == '.' {
					next[s+1] = true
				}
			default:
				if e == c {
					next[s+1] = true
				}
			}
			alive = alive || next[s] || next[s+1]
		}
		if !alive {
			return false
		}
		cur, next = next, cur
	}
}

// closure adds the states reachable without consuming the current name
// character c (or the end of the name when atEnd).
func closure(p []rune, st []bool, atEnd bool, c rune) {
	for s := 0; s < len(p); s++ {
		if !st[s] {
			continue
		}
		switch p[s] {
		case '*', dosStar:
			st[s+1] = true
		case dosQM:
			if atEnd || c == '.' {
				t := s
				for t < len(p) && p[t] == dosQM {
					t++
				}
				st[t] = true
			}
		case dosDot:
			if atEnd {
				st[s+1] = true
			}
		}
	}
}
