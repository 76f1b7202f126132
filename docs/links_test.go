// Package docs holds the project's documentation; its test keeps the links between the
// documents true.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// documents are the files whose links are checked, relative to the repository root.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join("..", "README.md"), filepath.Join("..", "CONTRIBUTING.md")}
	return append(files, docs...)
}

var (
	// inlineLink matches [text](target) and ![alt](target); the target ends at a space
	// (a title may follow) or at the closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink matches a reference definition: [name]: target.
	refLink = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// inlineCode matches a code span, whose brackets are not links.
	inlineCode = regexp.MustCompile("`[^`\n]*`")
)

// TestRelativeLinks: every relative link in README.md, CONTRIBUTING.md and docs/*.md points
// at a file or directory that exists, and every #anchor into a markdown file names one of
// its headings (as GitHub derives them).
func TestRelativeLinks(t *testing.T) {
	t.Parallel()
	files := documents(t)
	if len(files) < 3 {
		t.Fatalf("found only %v", files)
	}
	anchors := map[string]map[string]bool{} // markdown file (clean path) -> its anchors
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(text)) {
			if err := check(f, l.target, anchors); err != nil {
				t.Errorf("%s:%d: link %q: %v", filepath.ToSlash(strings.TrimPrefix(f, ".."+string(filepath.Separator))), l.line, l.target, err)
			}
		}
	}
}

type link struct {
	target string
	line   int
}

// prose calls f with every line of a markdown text that is outside fenced code blocks, and
// its line number.
func prose(text string, f func(line string, n int)) {
	fence := ""
	for i, ln := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(ln)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
		default:
			f(ln, i+1)
		}
	}
}

// links returns the link targets of a markdown text outside code blocks and code spans,
// with their line numbers.
func links(text string) []link {
	var out []link
	prose(text, func(ln string, n int) {
		ln = inlineCode.ReplaceAllString(ln, "")
		for _, m := range inlineLink.FindAllStringSubmatch(ln, -1) {
			out = append(out, link{m[1], n})
		}
		for _, m := range refLink.FindAllStringSubmatch(ln, -1) {
			out = append(out, link{m[1], n})
		}
	})
	return out
}

// check reports what is wrong with target, a link in the markdown file from; external
// links (a scheme, or //host) are not checked.
func check(from, target string, anchors map[string]map[string]bool) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "//") ||
		strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := filepath.Clean(from)
	if path != "" {
		file = filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("no such file %s", filepath.ToSlash(file))
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	if anchors[file] == nil {
		text, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		anchors[file] = headingAnchors(string(text))
	}
	if !anchors[file][anchor] {
		return fmt.Errorf("no heading in %s has the anchor #%s", filepath.ToSlash(file), anchor)
	}
	return nil
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a markdown text:
// lower case, every character but letters, digits, spaces, hyphens and underscores
// dropped, spaces turned into hyphens, and -1, -2 ... after a repeated one.
func headingAnchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	prose(text, func(ln string, _ int) {
		title := strings.TrimLeft(ln, "#")
		if level := len(ln) - len(title); level == 0 || level > 6 || !strings.HasPrefix(title, " ") {
			return
		}
		title = strings.TrimSpace(title)
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

// TestHeadingAnchors pins the anchor rule on headings this repository has.
func TestHeadingAnchors(t *testing.T) {
	t.Parallel()
	got := headingAnchors("# The house, in motion\n## Connections (`make bench-conn`)\n" +
		"## 2M msg/s fan-out\n```\n# not a heading\n```\n## Notes\n## Notes\n")
	for _, want := range []string{"the-house-in-motion", "connections-make-bench-conn",
		"2m-msgs-fan-out", "notes", "notes-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a line in a code block was taken for a heading: %v", got)
	}
}
