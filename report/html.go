package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/mqblast/mqblast/result"
)

// UPlotVersion is the vendored charting library's version (assets/, from the npm registry).
const UPlotVersion = "1.6.32"

var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed assets/uPlot.LICENSE
	uplotLicense string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/page.html
	pageHTML string
)

// uplotScript is the inline script that carries uPlot, its licence first.
var uplotScript = "/*! uPlot " + UPlotVersion + "\n" + uplotLicense + "*/\n" + uplotJS

// pageCSP is the pages' policy: their two scripts and nothing else run.
var pageCSP = CSP(uplotScript, reportJS)

// CSP returns the Content-Security-Policy of a self-contained page whose inline scripts
// are scripts, byte for byte as the page holds them: each is allowed by its SHA-256 hash,
// and no other script runs (none of a document's text that escaping missed, no inline
// event handler, no javascript: URL); styles may be inline; images only data: URLs;
// nothing is requested (default-src 'none'), no <base> and no form is honoured. Data
// blocks (<script type="application/json">) are not scripts and need no hash.
func CSP(scripts ...string) string {
	var b strings.Builder
	b.WriteString("default-src 'none'; script-src")
	if len(scripts) == 0 {
		b.WriteString(" 'none'")
	}
	for _, s := range scripts {
		h := sha256.Sum256([]byte(s))
		b.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'")
	}
	b.WriteString("; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")
	return b.String()
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"svg": func(s string) template.HTML { return template.HTML(s) }, // BoxplotSVG escapes its text
	"mark": func(t Table, r, i int) bool {
		return r < len(t.Marks) && i < len(t.Marks[r]) && t.Marks[r][i]
	},
}).Parse(pageHTML))

// pageData is what the page template fills in.
type pageData struct {
	Page          *Page
	CSS, UPlotCSS template.CSS
	JS, UPlotJS   template.JS
	ResultJSON    template.JS
	ChartsJSON    template.JS
	CSP           string
	Version       string
	UPlotVersion  string
	Multi         bool
	LiveJS        template.JS // a live page's own script ("": none)
}

// writePage writes p as one self-contained HTML page with docs (a result document or a list
// of them) embedded as JSON.
func writePage(w io.Writer, p *Page, docs any, version string, multi bool) error {
	d, err := newPageData(p, docs, version, multi)
	if err != nil {
		return err
	}
	return executePage(w, d)
}

// newPageData is what the page template fills in for p with docs embedded.
func newPageData(p *Page, docs any, version string, multi bool) (pageData, error) {
	res, err := json.Marshal(docs) // escapes <, > and &: safe inside a script element
	if err != nil {
		return pageData{}, fmt.Errorf("cannot encode the result for the report: %w", err)
	}
	charts, err := json.Marshal(p.Charts())
	if err != nil {
		return pageData{}, fmt.Errorf("cannot encode the charts: %w", err)
	}
	d := pageData{Page: p, CSS: template.CSS(reportCSS), UPlotCSS: template.CSS(uplotCSS), // our own assets
		JS: template.JS(reportJS), UPlotJS: template.JS(uplotScript), //nolint:gosec // the scripts pageCSP hashes, verbatim
		ResultJSON: template.JS(res), ChartsJSON: template.JS(charts), CSP: pageCSP, Version: version, UPlotVersion: UPlotVersion, Multi: multi}
	return d, nil
}

// executePage writes the page d describes.
func executePage(w io.Writer, d pageData) error {
	if err := pageTmpl.Execute(w, d); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}

// WriteHTML writes the HTML report of r to w: one self-contained page (charting library,
// styles and the result document inline; it requests nothing when opened), readable in a
// light or dark theme and printable. name labels the result (e.g. its file name) when its
// scenario does not.
func WriteHTML(w io.Writer, r *result.Result, name string) error {
	return writePage(w, NewReport(r, name), r, r.ToolVersion, false)
}
