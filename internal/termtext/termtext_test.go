package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	t.Parallel()
	check := func(in, want string) {
		t.Helper()
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
	check("", "")
	check("mosquitto 2.0.11, µs ✓ 日本", "mosquitto 2.0.11, µs ✓ 日本")
	check(`C:\path \x1b`, `C:\path \x1b`) // a backslash is kept
	// A certificate name that would retitle the window and turn the terminal red.
	check("x509: certificate is valid for \x1b]0;pwned\x07\x1b[31m, not localhost",
		`x509: certificate is valid for \x1b]0;pwned\x07\x1b[31m, not localhost`)
	check("v1\nmqblast: forged line\r\tx", `v1\nmqblast: forged line\r\tx`)
	check("nul\x00 del\x7f", `nul\x00 del\x7f`)
	check("c1 \u0085 \u009b31m", `c1 \u0085 \u009b31m`)
	check("abc\u202edcba\u2066x\u2069 \u200f\u061c", `abc\u202edcba\u2066x\u2069 \u200f\u061c`)
	check("sep\u2028line\u2029para", `sep\u2028line\u2029para`)
	check("bad \xff\xc2 utf8 \xe2\x80", `bad \xff\xc2 utf8 \xe2\x80`)
	check("\u00a0nbsp and \ufffd kept", "\u00a0nbsp and \ufffd kept")
}

func TestText(t *testing.T) {
	t.Parallel()
	in := "two problems:\n\tfirst \x1b[2J\n\tsecond\r\n"
	if got, want := Text(in), "two problems:\n\tfirst \\x1b[2J\n\tsecond\\r\n"; got != want {
		t.Errorf("Text(%q) = %q, want %q", in, got, want)
	}
}

// FuzzLine holds Line's and Text's promises on any input:
//  1. the output is valid UTF-8 with no character that Line escapes (for Text, but
//     newlines and tabs);
//  2. escaping is idempotent (Line(Line(s)) == Line(s));
//  3. text with nothing to escape comes back unchanged.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;t\x07", "a\nb", "\xff\xfe", "\u202e\u0085", `\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lines := range []bool{false, true} {
			out := escape(s, lines)
			if !utf8.ValidString(out) {
				t.Fatalf("escape(%q, %v) = %q: invalid UTF-8", s, lines, out)
			}
			for _, r := range out {
				if needsEscape(r, utf8.RuneLen(r), lines) {
					t.Fatalf("escape(%q, %v) = %q keeps %U", s, lines, out, r)
				}
			}
			if again := escape(out, lines); again != out {
				t.Fatalf("escape is not idempotent on %q: %q then %q", s, out, again)
			}
			if out != s && !strings.ContainsRune(out, '\\') {
				t.Fatalf("escape(%q, %v) = %q changed text with nothing to escape", s, lines, out)
			}
		}
	})
}
