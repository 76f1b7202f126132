package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mqblast/mqblast/internal/atomicfile"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
)

// Outputs are the machine-readable outputs of a run (docs/outputs.md): the CSV and hlog
// files written at its end, and Metrics, live Prometheus metrics during it.
type Outputs struct {
	CSV, Hlog     string        // files to write ("": none)
	Metrics       string        // address to serve /metrics at ("": none)
	MetricsPublic bool          // allow a Metrics address that is not loopback
	MetricsHold   time.Duration // keep serving this long after the run

	live     *metrics.Live // set by Serve
	server   *metrics.Server
	finished bool // live has the result's figures
}

// Check checks the outputs before the run starts: files that can be written, an address
// that is loopback (or allowed). Its errors are usage errors.
func (of *Outputs) Check() error {
	for _, f := range []struct{ flag, path string }{{"--csv", of.CSV}, {"--hlog", of.Hlog}} {
		if f.path == "" {
			continue
		}
		if err := CheckOut(f.flag, f.path, "result.json"); err != nil {
			return err
		}
	}
	if of.MetricsHold < 0 {
		return usage(fmt.Errorf("--metrics-hold %v: must be 0 or more", of.MetricsHold))
	}
	if of.Metrics != "" {
		if err := metrics.CheckAddr(of.Metrics, of.MetricsPublic); err != nil {
			return usage(err)
		}
	} else if of.MetricsPublic || of.MetricsHold > 0 {
		return usage(fmt.Errorf("--metrics-public and --metrics-hold need --metrics ADDR"))
	}
	return nil
}

// Serve starts the /metrics server for a run of target clients (nothing without Metrics)
// and says where on log.
func (of *Outputs) Serve(log io.Writer, target int) error {
	if of.Metrics == "" {
		return nil
	}
	of.live = metrics.NewLive(target, runtime.NumCPU())
	s, err := metrics.Serve(of.Metrics, of.live)
	if err != nil {
		return usage(err)
	}
	of.server = s
	fmt.Fprintf(log, "metrics at http://%s/metrics\n", s.Addr())
	return nil
}

// SetGroups names the client groups of a mixed run for the live metrics' group label
// (nothing without Metrics).
func (of *Outputs) SetGroups(names []string) {
	if of.live != nil && len(names) > 0 {
		of.live.SetGroups(names)
	}
}

// OnInterval feeds the live metrics (nil without Metrics): Options.OnInterval.
func (of *Outputs) OnInterval(log io.Writer) func(result.Interval, *result.Snapshot) {
	if of.live == nil {
		return nil
	}
	warned := false
	return func(iv result.Interval, s *result.Snapshot) {
		if err := of.live.Interval(iv, s); err != nil && !warned {
			warned = true
			fmt.Fprintf(log, "warning: --metrics: a latency histogram is missing: %v\n", err)
		}
	}
}

// Finish writes CSV and Hlog from the final result and gives the live metrics their
// end-of-run figures. It returns the first error.
func (of *Outputs) Finish(log io.Writer, res *result.Result) error {
	err := WriteOutputs(log, res, of.CSV, of.Hlog)
	if of.live != nil {
		of.live.Finish(res)
		of.finished = true
	}
	return err
}

// Stop closes the metrics server once the run is over (its result written): a finished
// run's after MetricsHold, so that a scraper sees the final figures (or until ctx ends); a
// run that failed before its end at once.
func (of *Outputs) Stop(ctx context.Context, log io.Writer) {
	if of.server == nil {
		return
	}
	if of.finished && of.MetricsHold > 0 {
		fmt.Fprintf(log, "serving the final metrics at http://%s/metrics for %v\n", of.server.Addr(), of.MetricsHold)
		select {
		case <-time.After(of.MetricsHold):
		case <-ctx.Done():
		}
	}
	_ = of.server.Close()
	of.server = nil
}

// WriteOutputs writes the CSV and the interval log of res to the files given (either may
// be empty), saying so on log.
func WriteOutputs(log io.Writer, res *result.Result, csvPath, hlogPath string) error {
	var first error
	for _, o := range []struct {
		path, what string
		write      func(io.Writer, *result.Result) error
	}{{csvPath, "CSV", report.WriteCSV}, {hlogPath, "HdrHistogram interval log", report.WriteHlog}} {
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

// WriteHTMLReport writes the HTML report of r (read from name, or a run's) to path and says
// where on log.
func WriteHTMLReport(log io.Writer, r *result.Result, name, path string) error {
	if err := WriteFile(path, func(w io.Writer) error { return report.WriteHTML(w, r, name) }); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	fmt.Fprintf(log, "report written to %s\n", abs)
	return nil
}

// CheckOut makes sure that the file of flag can be written to path when the run ends: path
// is not a directory and its directory takes a new file (WriteFile writes one and renames
// it). example is a file name the error suggests. Its errors are usage errors.
func CheckOut(flag, path, example string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usage(fmt.Errorf("%s %s: is a directory (give a file name, e.g. %s)", flag, path, filepath.Join(path, example)))
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".mqblast-check-*")
	if err != nil {
		return usage(fmt.Errorf("%s %s: cannot write there: %w (give a path in an existing, writable directory)", flag, path, err))
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
