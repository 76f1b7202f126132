package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mqblast/mqblast/internal/termtext"
)

const (
	defaultTimeout = 800 * time.Millisecond
	defaultMaxBody = 16 << 20
	// keepBuf is the largest body buffer kept for the next scrape; a larger one (a body
	// near MaxBody) is dropped after use rather than held for the scraper's life.
	keepBuf = 4 << 20
	// maxErr bounds the foreign text in an error, in bytes before escaping.
	maxErr = 160
)

// accept asks for the text format 0.0.4 first, which expfmt parses in full, then
// OpenMetrics 1.0.0 (read through the same parser after normalizing), as Prometheus's own
// scrape header lists them; protobuf is never asked for.
const accept = "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5," +
	"application/openmetrics-text;version=0.0.1;q=0.4,*/*;q=0.1"

func newScraper(urls []string, o Options) (*Scraper, error) {
	if len(urls) == 0 {
		return nil, errors.New("exporter: no metrics URL to scrape: give one (http://HOST:9100/metrics)")
	}
	for _, raw := range urls {
		if err := checkURL(raw); err != nil {
			return nil, err
		}
	}
	switch {
	case o.Timeout < 0:
		return nil, fmt.Errorf("exporter: timeout %v: want a positive duration (default %v)", o.Timeout, defaultTimeout)
	case o.Timeout == 0:
		o.Timeout = defaultTimeout
	}
	switch {
	case o.MaxBody < 0:
		return nil, fmt.Errorf("exporter: body limit %d: want a positive number of bytes (default %d)", o.MaxBody, defaultMaxBody)
	case o.MaxBody == 0:
		o.MaxBody = defaultMaxBody
	}
	if o.Auth.BearerToken != "" && (o.Auth.Username != "" || o.Auth.Password != "") {
		return nil, errors.New("exporter: credentials hold both a bearer token and a username or password: give one of them")
	}
	if o.Auth.Password != "" && o.Auth.Username == "" {
		return nil, errors.New("exporter: credentials hold a password without a username: give the username too")
	}
	s := &Scraper{urls: append([]string(nil), urls...), o: o}
	for _, raw := range o.Series {
		sp, err := parseSpec(raw)
		if err != nil {
			return nil, err
		}
		s.specs = append(s.specs, sp)
	}
	s.o.Series = append([]string(nil), o.Series...)
	tr := &http.Transport{
		// No proxy from the environment: credentials go to the exporter and nowhere else.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConns:          2 * len(urls),
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		// Uncompressed: the exporter then spends no CPU on gzip on the host being
		// measured, nor this process on gunzip (15% of a scrape's CPU, profiled in
		// BenchmarkScrapeNodeExporter); a node_exporter body is ~50 KB a second.
		DisableCompression: true,
	}
	s.client = &http.Client{
		Transport: tr,
		// A redirect is reported, not followed: the credentials stay with the URL given.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.bufs = make([]*bytes.Buffer, len(urls))
	for i := range s.bufs {
		s.bufs[i] = new(bytes.Buffer)
	}
	return s, nil
}

// checkURL accepts an http or https URL with a host and without userinfo.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the whole URL, which may hold a password: name the problem only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("exporter: metrics URL %q: cannot parse it: %w", termtext.Line(stripUserinfo(raw)), err)
	}
	if u.User != nil {
		u.User = nil
		return fmt.Errorf("exporter: metrics URL %q holds credentials: put them in the credentials file or MQBLAST_METRICS_USERNAME, MQBLAST_METRICS_PASSWORD, MQBLAST_METRICS_TOKEN, not in the URL",
			termtext.Line(u.String()))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("exporter: metrics URL %q: want http:// or https://, as in http://HOST:9100/metrics", termtext.Line(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("exporter: metrics URL %q has no host: want http://HOST:PORT/metrics", termtext.Line(raw))
	}
	return nil
}

// stripUserinfo cuts what lies between "//" and the last "@" of the authority of a URL
// that url.Parse refused, so that an error never quotes a password.
func stripUserinfo(raw string) string {
	i := strings.Index(raw, "//")
	if i < 0 {
		return raw
	}
	rest := raw[i+2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return raw[:i+2] + rest[at+1:]
	}
	return raw
}

// Close drops the scraper's idle connections.
func (s *Scraper) Close() { s.client.CloseIdleConnections() }

// page is one URL's scrape: its target and, when it succeeded, its families.
type page struct {
	t    Target
	fams map[string]*dto.MetricFamily
}

func (s *Scraper) scrape(ctx context.Context) Reading {
	r := Reading{At: time.Now(), Targets: make([]Target, len(s.urls))}
	pages := make([]page, len(s.urls))
	var wg sync.WaitGroup
	for i := range s.urls {
		wg.Go(func() { pages[i] = s.get(ctx, i) })
	}
	wg.Wait()
	for i := range pages {
		r.Targets[i] = pages[i].t
		if len(pages[i].t.Groups) > 0 {
			s.grouped = true
		}
	}
	r.Host = hostOf(pages)
	r.Process = s.processOf(pages)
	r.Series = seriesOf(s.specs, pages)
	return r
}

// get scrapes URL i.
func (s *Scraper) get(ctx context.Context, i int) page {
	p := page{t: Target{URL: s.urls[i]}}
	start := time.Now()
	fams, err := s.fetch(ctx, i)
	p.t.Took = time.Since(start)
	if err != "" {
		p.t.Err = err
		return p
	}
	p.fams = fams
	p.t.Families = len(fams)
	p.t.Kinds, p.t.Groups = recognise(fams)
	return p
}

// fetch requests URL i and parses its body; it returns why it failed, one line.
func (s *Scraper) fetch(ctx context.Context, i int) (map[string]*dto.MetricFamily, string) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	resp, err := s.do(ctx, i)
	if err != nil {
		return nil, s.why(ctx, err, "")
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read a little so that the connection can be kept.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, statusError(resp, s.o.Auth)
	}
	buf := s.bufs[i]
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, s.o.MaxBody+1))
	defer func() {
		if buf.Cap() > keepBuf {
			s.bufs[i] = new(bytes.Buffer)
		}
	}()
	if err != nil {
		return nil, s.why(ctx, err, " reading the body")
	}
	if n > s.o.MaxBody {
		return nil, fmt.Sprintf("body over %d bytes: is this a metrics endpoint?", s.o.MaxBody)
	}
	fams, perr := parseBody(buf.Bytes(), resp.Header.Get("Content-Type"))
	if perr != "" {
		return nil, perr
	}
	return fams, ""
}

// do sends the request for URL i. A kept connection the endpoint closed or reset before
// answering is retried on a new one by net/http itself (TestKeptConnectionReset).
func (s *Scraper) do(ctx context.Context, i int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.urls[i], http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "mqblast")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", fmt.Sprintf("%.3f", s.o.Timeout.Seconds()))
	switch a := s.o.Auth; {
	case a.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+a.BearerToken)
	case a.Username != "":
		req.SetBasicAuth(a.Username, a.Password)
	}
	return s.client.Do(req)
}

// why says in one line why a request or a body read failed.
func (s *Scraper) why(ctx context.Context, err error, during string) string {
	switch {
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return "canceled" + during
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("timeout after %v%s: the exporter did not answer in time", s.o.Timeout, during)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: is the exporter running and listening on that address?"
	}
	return clip(unwrapURL(err).Error()) + during
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unwrapURL drops url.Error's method and URL, which the target already names.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// statusError is a non-2xx answer in one line, with the fix where there is an obvious one.
func statusError(resp *http.Response, a Auth) string {
	msg := "HTTP " + clip(resp.Status)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if a.String() == "none" {
			return msg + ": the endpoint wants credentials: give them in the credentials file or MQBLAST_METRICS_* variables"
		}
		return msg + ": check the credentials (" + a.String() + ")"
	case http.StatusNotFound:
		return msg + ": check the path (exporters serve /metrics)"
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return msg + ": the endpoint redirects to " + clip(stripUserinfo(resp.Header.Get("Location"))) + ": give that URL"
	}
	return msg
}

// clip cuts foreign text to maxErr bytes (at a rune start) and makes it safe to print.
func clip(s string) string {
	if len(s) > maxErr {
		cut := maxErr
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return termtext.Line(s)
}

// parseBody parses a text (0.0.4) or OpenMetrics body; it returns why it is neither.
func parseBody(b []byte, contentType string) (map[string]*dto.MetricFamily, string) {
	media, _, _ := mime.ParseMediaType(contentType)
	if media == expfmt.OpenMetricsType {
		b = normalizeOpenMetrics(b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err == nil {
		return fams, ""
	}
	what := "not Prometheus text"
	if media != "" && media != "text/plain" && media != expfmt.OpenMetricsType {
		what += " (Content-Type " + clip(media) + ")"
	}
	var pe expfmt.ParseError
	if errors.As(err, &pe) {
		return nil, fmt.Sprintf("%s: line %d: %s", what, pe.Line, clip(pe.Msg))
	}
	return nil, what + ": " + clip(err.Error())
}

// normalizeOpenMetrics rewrites an OpenMetrics body into the text format expfmt's parser
// reads, line for line (so a parse error's line number is the body's): "# EOF", "# UNIT"
// and info types go, a counter's TYPE names its _total series, exemplars and timestamps
// (seconds in OpenMetrics, milliseconds in text) are cut, stateset and unknown become
// gauge and untyped. Nothing after "# EOF" is read.
func normalizeOpenMetrics(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		switch {
		case bytes.Equal(line, []byte("# EOF")):
			return out
		case bytes.HasPrefix(line, []byte("# UNIT ")):
		case bytes.HasPrefix(line, []byte("# TYPE ")):
			f := strings.Fields(string(line[len("# TYPE "):]))
			if len(f) != 2 {
				out = append(out, line...)
				break
			}
			name, typ := f[0], f[1]
			switch typ {
			case "counter":
				if !strings.HasSuffix(name, "_total") {
					name += "_total"
				}
			case "info":
				typ = ""
			case "stateset":
				typ = "gauge"
			case "unknown":
				typ = "untyped"
			}
			if typ != "" {
				out = append(out, "# TYPE "+name+" "+typ...)
			}
		case len(line) > 0 && line[0] == '#':
			out = append(out, line...)
		default:
			out = appendSample(out, line)
		}
		out = append(out, '\n')
	}
	return out
}

// appendSample appends an OpenMetrics sample line without its timestamp and exemplar:
// the name, its labels as written, and the value.
func appendSample(out, line []byte) []byte {
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' {
		i++
	}
	if i < len(line) && line[i] == '{' {
		quoted := false
		for i++; i < len(line); i++ {
			c := line[i]
			if quoted {
				switch c {
				case '\\':
					i++
				case '"':
					quoted = false
				}
				continue
			}
			if c == '"' {
				quoted = true
			} else if c == '}' {
				i++
				break
			}
		}
	}
	head := line[:min(i, len(line))]
	rest := bytes.TrimLeft(line[len(head):], " ")
	value := rest
	if j := bytes.IndexByte(rest, ' '); j >= 0 {
		value = rest[:j]
	}
	if len(value) == 0 {
		return append(out, line...) // malformed: the parser says where
	}
	out = append(out, head...)
	out = append(out, ' ')
	return append(out, value...)
}
