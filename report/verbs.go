package report

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/result"
)

// Files are the files a verb that reads result documents writes ("": none).
type Files struct {
	HTML, CSV, Hlog string
}

// check refuses, as a usage error naming its flag, a file that cannot be written.
func (f Files) check() error {
	for _, o := range []struct{ flag, path, example string }{{"--html", f.HTML, "report.html"}, {"--csv", f.CSV, "result.json"},
		{"--hlog", f.Hlog, "result.json"}} {
		if o.path == "" {
			continue
		}
		if err := CheckPath(o.path, o.example); err != nil {
			return fail.Mark(fail.ErrUsage, fmt.Errorf("%s %s: %w", o.flag, o.path, err))
		}
	}
	return nil
}

// Render is `mqblast report PATH`: the result document at path as its summary on stdout,
// or its HTML report, CSV and hlog in files (said on stderr). A document that cannot be
// read is a usage error.
func Render(stdout, stderr io.Writer, path string, f Files) error {
	if err := f.check(); err != nil {
		return err
	}
	r, err := result.ReadFile(path)
	if err != nil {
		return fail.Mark(fail.ErrUsage, err)
	}
	if err := WriteOutputs(stderr, r, f.CSV, f.Hlog); err != nil {
		return err
	}
	if f.HTML == "" {
		return WriteSummary(stdout, r)
	}
	return WriteHTMLFile(stderr, r, filepath.Base(path), f.HTML)
}

// CompareFiles is `mqblast compare PATHS`: the documents at paths side by side on stdout,
// and on an HTML page (f.HTML) of mqblast version; a document that cannot be read is a
// usage error.
func CompareFiles(stdout, stderr io.Writer, paths []string, f Files, version string) error {
	if err := f.check(); err != nil {
		return err
	}
	rs, err := result.ReadFiles(paths)
	if err != nil {
		return fail.Mark(fail.ErrUsage, err)
	}
	in := make([]Input, len(rs))
	for i, r := range rs {
		in[i] = Input{Name: paths[i], Result: r}
	}
	if err := WriteCompare(stdout, in); err != nil || f.HTML == "" {
		return err
	}
	if err := WriteFile(f.HTML, func(w io.Writer) error { return WriteCompareHTML(w, in, version) }); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "comparison written to %s\n", f.HTML)
	return nil
}

// MergeFiles is `mqblast merge PATHS`: the shards' documents at paths merged into one,
// written to out (if given) and stdout as format says (WriteResult). Documents that are
// not the distinct shards of one run are a usage error naming the file and the field.
func MergeFiles(stdout, stderr io.Writer, paths []string, out, format string) error {
	if format != "text" && format != "json" {
		return fail.Mark(fail.ErrUsage, fmt.Errorf("--format %q: must be text or json", format))
	}
	rs, err := result.ReadFiles(paths)
	if err == nil {
		err = result.CheckFiles(paths, rs)
	}
	if err != nil {
		return fail.Mark(fail.ErrUsage, err)
	}
	return WriteResult(stdout, stderr, result.Merge(rs), out, format)
}
