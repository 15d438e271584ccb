package fscc

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		ci            bool
		want          bool
	}{
		{"", "", false, true},
		{"*", "", false, false},
		{"", "a", false, false},
		{"*", "foo", false, true},
		{"*.*", "foo", false, true}, // special case of [MS-FSA] 2.1.4.4 Part 1
		{"*.*", "foo.txt", false, true},
		{"*.*", "", false, false},
		{"t*.*", "test", false, false}, // only the whole "*.*" is special
		{"t*.*", "test.c", false, true},
		{"*.txt", "a.txt", false, true},
		{"*.txt", "a.TXT", false, false},
		{"*.txt", "a.TXT", true, true},
		{"*.TXT", "a.txt", true, true},
		{"*.txt", "txt", false, false},
		{"*.txt", ".txt", false, true},
		{"a?c", "abc", false, true},
		{"a?c", "ac", false, false},
		{"a?c", "abbc", false, false},
		{"?", "é", false, true},
		{"??", "é", false, false},
		{"a*b*c", "aXbYc", false, true},
		{"a*b*c", "aXbYcZ", false, false},
		{"a*b", "ab", false, true},
		{"*a", "bbba", false, true},
		{"*a", "aab", false, false},
		{"**", "x", false, true},
		{"*?", "x", false, true},
		{"*?*?", "x", false, false},
		{"*.", "foo", false, false}, // literal '.'
		{"foo", "FOO", false, false},
		{"foo", "FOO", true, true},
		{"Ä*", "äb", true, true},
		{"Ä*", "äb", false, false},
		// DOS_STAR: never consumes the final dot.
		{"<.txt", "a.txt", false, true},
		{"<.txt", "a.b.txt", false, true},
		{"<.txt", "a.txt.bak", false, false},
		{"<", "abc", false, true},
		{"<", "a.b", false, false},
		{"<b", "a.b", false, false},
		{"<.<", "a.b.c", false, true},
		{`<"`, "abc", false, true}, // Win32 "*." : names without extension
		{`<"`, "a.b", false, false},
		{`<"`, "a.", false, true},
		// DOS_DOT: a dot, or nothing at the end of the name.
		{`foo"*`, "foo", false, true}, // Win32 "foo.*"
		{`foo"*`, "foo.bar", false, true},
		{`foo"*`, "foobar", false, false},
		{`a"b`, "a.b", false, true},
		{`a"b`, "ab", false, false},
		// DOS_QM: one char, or nothing at a dot / end of name.
		{">>>.txt", "ab.txt", false, true},
		{">>>.txt", "abc.txt", false, true},
		{">>>.txt", "abcd.txt", false, false},
		{"???.txt", "ab.txt", false, false},
		{">>>", "ab", false, true},
		{">>>", "", false, false},
		{">>>", "abcd", false, false},
		{`>>>">>>`, "ab.c", false, true}, // Win32 "???.???"
		{`>>>">>>`, "abc", false, true},
		{`>>>">>>`, "abcd.e", false, false},
		{`>>>">>>`, "a.bcde", false, false},
		{">.b", ".b", false, true},
		{"a>", "a", false, true},
		{"a>c", "ac", false, false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.name, tt.ci); got != tt.want {
			t.Errorf("Match(%q, %q, %v) = %v, want %v", tt.pattern, tt.name, tt.ci, got, tt.want)
		}
	}
}

func TestMatchLongPattern(t *testing.T) {
	p := ""
	n := ""
	for range 100 {
		p += "a*"
		n += "ab"
	}
	if !Match(p, n, false) || Match(p+"c", n, false) {
		t.Fatal("long pattern mismatch")
	}
}

func TestHasWildcards(t *testing.T) {
	for s, want := range map[string]bool{"abc": false, "a*": true, "a?": true, "<": true, ">": true, `"`: true, "a.b": false} {
		if HasWildcards(s) != want {
			t.Errorf("HasWildcards(%q) != %v", s, want)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("<.txt", "a.b.txt", true)
	f.Add(`>>>">>>`, "ab.c", false)
	f.Fuzz(func(t *testing.T, p, n string, ci bool) {
		if len(p) > 300 || len(n) > 300 {
			return
		}
		Match(p, n, ci)
		if !HasWildcards(n) && n != "" && !Match("*", n, ci) {
			t.Fatal("* must match everything")
		}
	})
}
