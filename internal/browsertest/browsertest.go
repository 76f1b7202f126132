// Package browsertest opens pages in a real headless Chromium for tests, with the network
// off, and reports what the page did: console errors and uncaught exceptions, every request
// it made, values of JavaScript expressions, and a screenshot kept as an artifact.
//
// It drives Debian's /usr/bin/chromium (or $CHROMIUM) through the DevTools protocol with
// chromedp. A test without Chromium is skipped with the reason, except under CI ($CI set),
// where a missing browser fails it: .ci/run installs the chromium package.
//
//	p := browsertest.Open(t, "report.html", "window.mqblast && window.mqblast.ready")
//	// or, for several pages in one browser: b := browsertest.Start(t); p := b.Open(t, ...)
//	if errs := p.Errors(); len(errs) > 0 { t.Errorf(...) }
//	if reqs := p.Requests(); len(reqs) > 0 { t.Errorf(...) }
//	n := browsertest.Eval[int](p, `document.querySelectorAll("canvas").length`)
//	t.Log("screenshot:", p.Screenshot("report.png"))
//
// Injection and Planted are markup for the tests of a page's escaping and its
// Content-Security-Policy; CheckPlanted checks that none of it ran.
//
// Screenshots go to $ARTIFACTS_DIR when set, else to testdata/out/ under the test's package
// directory (gitignored).
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mqblast/mqblast/internal/tier"
)

// Chromium returns the path of the Chromium binary: $CHROMIUM, /usr/bin/chromium, or
// chromium or chromium-browser on PATH; "" when there is none.
func Chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Page is a page open in a tab of a headless Chromium. Its methods are for the test's
// goroutine.
type Page struct {
	t      testing.TB
	ctx    context.Context
	self   string // the page's own URL
	origin string // a served page's origin, whose requests are its own ("": a file's)

	mu       sync.Mutex
	errors   []string
	requests []string
}

// Timeout bounds starting the browser, loading the page and waiting for it to be ready.
var Timeout = 60 * time.Second

// Browser is a headless Chromium with a new empty profile and no network, for one test.
type Browser struct {
	ctx context.Context
	bin string
}

// Start starts a headless Chromium with a new empty profile and its network off (launch
// flags; each page is also set offline); it stops when the test ends. It skips t when
// Chromium is absent (fails it under CI).
func Start(t testing.TB) *Browser {
	t.Helper()
	tier.Integration(t)
	bin := Chromium()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium not found under CI: .ci/run installs it (apt-get install chromium), or set $CHROMIUM")
		}
		t.Skip("chromium not found (apt-get install chromium, or set $CHROMIUM): the browser test needs a real browser")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first run starts the browser and ties it to ctx: a context derived for a
	// timeout would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium %s: cannot start: %v", bin, err)
	}
	return &Browser{ctx: ctx, bin: bin}
}

// Open starts a browser (Start) and opens the local file path in it (Browser.Open).
func Open(t testing.TB, path, ready string) *Page {
	t.Helper()
	return Start(t).Open(t, path, ready)
}

// Open opens the local file path in a new tab, offline, and waits until the JavaScript
// expression ready is true. The tab closes when the test ends.
func (b *Browser) Open(t testing.TB, path, ready string) *Page {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "file", Path: abs}
	p := &Page{t: t, self: u.String()}
	p.open(b, path, ready, true)
	return p
}

// OpenURL opens the http URL u — a page a test's own server serves on loopback — in a new
// tab and waits until the JavaScript expression ready is true. The network is on, for the
// page's requests to its own origin; any other request is recorded (Requests). The tab
// closes when the test ends.
func (b *Browser) OpenURL(t testing.TB, u, ready string) *Page {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		t.Fatalf("browsertest: %q is no URL", u)
	}
	p := &Page{t: t, self: u, origin: pu.Scheme + "://" + pu.Host + "/"}
	p.open(b, u, ready, false)
	return p
}

// open opens p's page in a new tab (offline: with the network off).
func (p *Page) open(b *Browser, path, ready string, offline bool) {
	t := p.t
	t.Helper()
	ctx, cancelCtx := chromedp.NewContext(b.ctx, chromedp.WithListener(p.listen))
	p.ctx = ctx
	t.Cleanup(cancelCtx)
	if err := chromedp.Do(ctx); err != nil { // opens the tab, tied to ctx
		t.Fatalf("chromium: cannot open a tab: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	// chromedp enables the Runtime, Log and Network domains of the tab; the page then runs
	// offline: every request would fail, and each is recorded (listen).
	off := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if !offline {
			return nil
		}
		return networkOffline(ctx, t, true)
	})
	err := chromedp.Do(tctx, off, chromedp.Navigate(p.self))
	if err == nil {
		_, err = chromedp.Run(tctx, chromedp.Poll[bool](ready, chromedp.WithPollingInterval(50*time.Millisecond)))
	}
	if err != nil {
		t.Fatalf("chromium: cannot open %s and wait for %q: %v (console: %s)", path, ready, err, strings.Join(p.Errors(), "; "))
	}
}

// networkOffline takes the tab's network off (or on again).
func networkOffline(ctx context.Context, t *chromedp.Target, on bool) error {
	if _, err := cdp.Call(ctx, t, network.OverrideNetworkState, network.OverrideNetworkStateParams{
		Offline: on, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		return fmt.Errorf("network offline %v: %w", on, err)
	}
	_, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{Offline: on, DownloadThroughput: -1, UploadThroughput: -1}}})
	if err != nil {
		// A Chromium before the rule's form (Debian's 148 answers "Invalid parameters")
		// takes the older command, which later ones dropped.
		if _, err2 := cdp.Call(ctx, t, emulateNetworkConditions, legacyConditions{Offline: on,
			DownloadThroughput: -1, UploadThroughput: -1}); err2 != nil {
			return fmt.Errorf("network conditions offline %v: %w; the older command: %w", on, err, err2)
		}
	}
	return nil
}

// SetOffline takes the page's network off, which ends its connections (an event stream's
// too), or puts it back on: a page served by a test (OpenURL) that loses its server.
func (p *Page) SetOffline(on bool) error {
	return p.Do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error { return networkOffline(ctx, t, on) }))
}

func (p *Page) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				if a.Value != nil {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			p.errors = append(p.errors, "console."+string(e.Type)+": "+strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		p.errors = append(p.errors, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			p.errors = append(p.errors, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		if u := e.Request.URL; u != p.self && !strings.HasPrefix(u, "data:") && u != "about:blank" &&
			(p.origin == "" || !strings.HasPrefix(u, p.origin)) {
			p.requests = append(p.requests, u)
		}
	}
}

// Errors returns the console errors, uncaught exceptions and error log entries so far.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// Requests returns every URL the page requested besides itself and data: URLs.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Eval evaluates the JavaScript expression on p's page and returns its value as a T
// (decoded from JSON); it fails the test on an exception.
func Eval[T any](p *Page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("chromium: evaluate %q: %v", expr, err)
	}
	return v
}

// Do runs chromedp actions on the page (to click, resize, emulate media).
func (p *Page) Do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// ArtifactDir returns where screenshots go: $ARTIFACTS_DIR, else testdata/out under the
// current directory (a test's package directory). It creates the directory.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("cannot make the artifact directory: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return abs
}

// Screenshot writes a PNG of the whole page to name in ArtifactDir and returns its path.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("chromium: screenshot: %v", err)
	}
	path := filepath.Join(ArtifactDir(p.t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("cannot write the screenshot: %v", err)
	}
	return path
}

// Injection is markup for a crafted document's strings, and Planted markup to put into a
// page as if escaping had missed it: scripts and inline event handlers that set
// window.pwned if they ever run. A page that escapes its text shows Injection as text; a
// page whose Content-Security-Policy runs only its own scripts runs neither (CheckPlanted).
const (
	Injection = `</script><script>window.pwned="text"</script><img src="data:," onerror="window.pwned='handler'">`
	Planted   = `<script>window.pwned="planted"</script><img src="data:," onerror="window.pwned='planted handler'">`
)

// CheckPlanted fails the test when a script the page did not write ran (window.pwned is
// set), when the page logged an error that is not a Content-Security-Policy violation, or
// when it logged no violation at all (for a page that was given Planted).
func (p *Page) CheckPlanted() {
	p.t.Helper()
	if got := Eval[string](p, `String(window.pwned)`); got != "undefined" {
		p.t.Errorf("window.pwned = %q: a script the page did not write ran", got)
	}
	violations := 0
	for _, e := range p.Errors() {
		if strings.Contains(e, "Content Security Policy") {
			violations++
		} else {
			p.t.Errorf("console error other than the planted script's: %s", e)
		}
	}
	if violations == 0 {
		p.t.Errorf("no Content-Security-Policy violation reported for the planted script and handler")
	}
}

// Wait polls the JavaScript expression until it is true; it fails the test after Timeout.
func (p *Page) Wait(expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		p.t.Fatalf("chromium: wait for %q: %v (console: %s)", expr, err, strings.Join(p.Errors(), "; "))
	}
}

// emulateNetworkConditions is Network.emulateNetworkConditions, which Chromium had before
// Network.emulateNetworkConditionsByRule and cdproto no longer lists.
var emulateNetworkConditions = cdp.Command[legacyConditions, cdp.Empty]{Method: "Network.emulateNetworkConditions"}

// legacyConditions are its parameters.
type legacyConditions struct {
	Offline            bool    `json:"offline"`
	Latency            float64 `json:"latency"`
	DownloadThroughput float64 `json:"downloadThroughput"`
	UploadThroughput   float64 `json:"uploadThroughput"`
}
