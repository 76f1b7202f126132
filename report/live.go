package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
)

//go:embed assets/live.js
var liveJS string

// liveCSP is a live page's policy: the report's two scripts and its own run, and it may
// connect to where it came from (its event stream), nothing else.
var liveCSP = CSP(uplotScript, reportJS, liveJS) + "; connect-src 'self'"

// WriteLivePage writes p as the live page of a run under way: the report page (doc, the
// result so far, embedded as in WriteHTML) and a script that takes the page anew from the
// server's event stream at "events" as each interval closes (LivePart is what an event
// carries). Nothing is requested but that stream.
func WriteLivePage(w io.Writer, p *Page, doc any, version string) error {
	d, err := newPageData(p, doc, version, false)
	if err != nil {
		return err
	}
	d.LiveJS = template.JS(liveJS) //nolint:gosec // our own script, which liveCSP hashes verbatim
	d.CSP = liveCSP
	return executePage(w, d)
}

// LivePart is what a live page's script puts in place: the page's title, the HTML of its
// main element (header, warnings, panels) and its charts.
type LivePart struct {
	Title  string  `json:"title"`
	Main   string  `json:"main"`
	Charts []Chart `json:"charts"`
}

// NewLivePart renders p's part of a live page.
func NewLivePart(p *Page) (LivePart, error) {
	var b strings.Builder
	if err := pageTmpl.ExecuteTemplate(&b, "main", pageData{Page: p}); err != nil {
		return LivePart{}, fmt.Errorf("cannot write the live page: %w", err)
	}
	charts := p.Charts()
	if charts == nil {
		charts = []Chart{}
	}
	return LivePart{Title: p.Title, Main: b.String(), Charts: charts}, nil
}
