package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mqblast/mqblast/internal/atomicfile"
	"github.com/mqblast/mqblast/result"
)

// CheckPath says why a file cannot be written to path when a run ends (nil: it can): path
// is a directory, or its directory takes no new file (WriteFile writes one and renames
// it). example is a file name the message suggests.
func CheckPath(path, example string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("is a directory (give a file name, e.g. %s)", filepath.Join(path, example))
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".mqblast-check-*")
	if err != nil {
		return fmt.Errorf("cannot write there: %w (give a path in an existing, writable directory)", err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}

// WriteFile writes a file through a temporary file and a rename, so an interrupted write
// never leaves half a document.
func WriteFile(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, 0, write)
}

// WriteResult writes the result to out (if given) and to stdout, the document (format
// json) or its summary (text); stdout gets it even when out cannot be written, and that
// error is returned then. Where the file went is said on stderr, and so is a document that
// breaks an accounting identity (Audit).
func WriteResult(stdout, stderr io.Writer, res *result.Result, out, format string) error {
	doc, err := encodeResult(res)
	if err != nil {
		return err
	}
	where := out
	if where == "" {
		where = "stdout"
	}
	_ = Audit(stderr, doc, where)
	var ferr error
	if out != "" {
		if ferr = WriteFile(out, func(w io.Writer) error { _, err := w.Write(doc); return err }); ferr == nil {
			fmt.Fprintf(stderr, "result written to %s\n", out)
		}
	}
	if format == "json" {
		_, err = stdout.Write(doc)
	} else {
		err = WriteSummary(stdout, res)
	}
	if ferr != nil {
		return ferr
	}
	return err
}

// WriteOutputs writes the CSV and the interval log of res to the files given (either may
// be empty), saying so on log.
func WriteOutputs(log io.Writer, res *result.Result, csvPath, hlogPath string) error {
	var first error
	for _, o := range []struct {
		path, what string
		write      func(io.Writer, *result.Result) error
	}{{csvPath, "CSV", WriteCSV}, {hlogPath, "HdrHistogram interval log", WriteHlog}} {
		if o.path == "" {
			continue
		}
		err := WriteFile(o.path, func(w io.Writer) error { return o.write(w, res) })
		if err == nil {
			fmt.Fprintf(log, "%s written to %s\n", o.what, o.path)
		} else if first == nil {
			first = err
		}
	}
	return first
}

// WriteHTMLFile writes the HTML report of r (read from name, or a run's) to path and says
// where on log.
func WriteHTMLFile(log io.Writer, r *result.Result, name, path string) error {
	if err := WriteFile(path, func(w io.Writer) error { return WriteHTML(w, r, name) }); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	fmt.Fprintf(log, "report written to %s\n", abs)
	return nil
}
