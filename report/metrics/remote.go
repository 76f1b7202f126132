package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mqblast/mqblast/result"
)

// RemoteOptions are the settings of a Remote: where to push and how hard to try.
type RemoteOptions struct {
	// URL is the receiver's remote-write endpoint (Prometheus: /api/v1/write).
	URL string
	// Authorization is the Authorization header's value ("": none). It is sent, never
	// returned in an error, a string or the result.
	Authorization string
	// Labels are added to every series (job and instance, as a scrape would add them).
	Labels map[string]string
	// Timeout bounds one attempt (0: 5s); Tries the attempts of one push (0: 3); Queue the
	// pushes waiting while one is under way (0: 4): past it the oldest waiting is dropped
	// (its counters are in the newer one).
	Timeout time.Duration
	Tries   int
	Queue   int
	// Client is the HTTP client (nil: one of its own that follows no redirect).
	Client *http.Client
}

// CheckRemoteURL checks a --remote-write URL: http or https, a host, no credentials in it.
func CheckRemoteURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--remote-write %q: want an http(s) URL, e.g. http://127.0.0.1:9090/api/v1/write", redactURL(raw))
	}
	if u.User != nil {
		return fmt.Errorf("--remote-write %q: the URL holds credentials: put them in --remote-write-auth FILE or MQBLAST_REMOTE_WRITE_* variables, not in the URL", redactURL(raw))
	}
	return nil
}

// redactURL is raw without its userinfo.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	return u.String()
}

// push is one remote-write request waiting to be sent: the series gathered at one
// interval's end.
type push struct {
	fams []*dto.MetricFamily
	tsMS int64
}

// Remote pushes a Live collector's series to a Prometheus remote-write receiver (protocol
// 1.0: a snappy-compressed protobuf WriteRequest), once per interval and once at the end.
// The series are the ones /metrics serves, gathered through the same collector. A push
// that fails is retried a bounded number of times by a goroutine of its own; the interval
// loop only gathers and queues, so a slow or absent receiver never delays an interval.
type Remote struct {
	o      RemoteOptions
	reg    *prometheus.Registry
	q      chan push
	done   chan struct{}
	mu     sync.Mutex // guards closed and sends on q against its close
	closed bool
	ctx    context.Context
	stop   context.CancelFunc

	pushes, sent, failed, dropped, retries, samples atomic.Int64
	lastErr                                         atomic.Pointer[string]
}

// NewRemote returns a Remote for l, its sender started. Call Push once per interval and
// Finish once.
func NewRemote(l *Live, o RemoteOptions) (*Remote, error) {
	if err := CheckRemoteURL(o.URL); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Tries <= 0 {
		o.Tries = 3
	}
	if o.Queue <= 0 {
		o.Queue = 4
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(l); err != nil {
		return nil, fmt.Errorf("BUG: cannot register the metrics: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Remote{o: o, reg: reg, q: make(chan push, o.Queue), done: make(chan struct{}), ctx: ctx, stop: stop}
	go r.send()
	return r, nil
}

// Push gathers the collector's series as they are now, stamped now, and queues them. It
// never waits on the network: with the queue full, the oldest waiting push is dropped.
func (r *Remote) Push(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	fams, err := r.reg.Gather()
	if err != nil && len(fams) == 0 {
		r.pushes.Add(1)
		r.failed.Add(1)
		r.setErr("cannot gather the series: " + err.Error())
		return
	}
	r.pushes.Add(1)
	p := push{fams: fams, tsMS: now.UnixMilli()}
	for {
		select {
		case r.q <- p:
			return
		default:
		}
		select {
		case <-r.q:
			r.dropped.Add(1)
		default:
		}
	}
}

// Finish pushes the final series (call after the collector's Finish) and waits up to
// wait for the queue to empty; what is still waiting then is dropped, and a push under
// way is abandoned (failed). It returns the pushes' figures for the result.
func (r *Remote) Finish(now time.Time, wait time.Duration) *result.RemoteWrite {
	r.Push(now)
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.q)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(wait):
		r.stop()
		<-r.done
	}
	out := &result.RemoteWrite{Pushes: r.pushes.Load(), Sent: r.sent.Load(), Failed: r.failed.Load(),
		Dropped: r.dropped.Load(), Retries: r.retries.Load(), SamplesSent: r.samples.Load()}
	if e := r.lastErr.Load(); e != nil {
		out.LastError = *e
	}
	return out
}

func (r *Remote) setErr(s string) { r.lastErr.Store(&s) }

// send sends the queued pushes in order until the queue is closed and empty; once
// stopped, it drops what waits.
func (r *Remote) send() {
	defer close(r.done)
	var buf []byte
	for p := range r.q {
		if r.ctx.Err() != nil {
			r.dropped.Add(1)
			continue
		}
		var n int
		buf, n = appendWriteRequest(buf[:0], p.fams, r.o.Labels, p.tsMS)
		body := snappy.Encode(nil, buf)
		if err := r.try(body); err != nil {
			r.failed.Add(1)
			if !errors.Is(err, errAbandoned) || r.lastErr.Load() == nil {
				r.setErr(err.Error()) // the cause of the failures before it, not the run's end
			}
			continue
		}
		r.sent.Add(1)
		r.samples.Add(int64(n))
	}
}

// errFinal is an answer that no retry would change (a 4xx but 429); errAbandoned a push
// under way when the run's end came.
var (
	errFinal     = errors.New("remote write: the receiver refused the push")
	errAbandoned = errors.New("remote write: abandoned at the run's end")
)

// try makes up to Tries attempts of one push, backing off between them.
func (r *Remote) try(body []byte) error {
	var err error
	for i := range r.o.Tries {
		if i > 0 {
			r.retries.Add(1)
			select {
			case <-time.After(time.Duration(100<<i) * time.Millisecond):
			case <-r.ctx.Done():
				return errAbandoned
			}
		}
		if err = r.attempt(body); err == nil || errors.Is(err, errFinal) {
			return err
		}
		if r.ctx.Err() != nil {
			return errAbandoned
		}
	}
	return err
}

// attempt is one POST of body.
func (r *Remote) attempt(body []byte) error {
	ctx, cancel := context.WithTimeout(r.ctx, r.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.o.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("remote write: cannot build the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "mqblast")
	if r.o.Authorization != "" {
		req.Header.Set("Authorization", r.o.Authorization)
	}
	resp, err := r.o.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // its text repeats the URL; say the cause alone
			err = ue.Err
		}
		return fmt.Errorf("remote write: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c/100 == 2:
		return nil
	case c/100 == 4 && c != http.StatusTooManyRequests:
		return fmt.Errorf("%w: HTTP %d: %s", errFinal, c, strconv.Quote(string(bytes.TrimSpace(msg))))
	default:
		return fmt.Errorf("remote write: HTTP %d", c)
	}
}

// The remote-write 1.0 protobuf messages' fields.
const (
	fWriteTimeseries = 1 // WriteRequest.timeseries
	fSeriesLabels    = 1 // TimeSeries.labels
	fSeriesSamples   = 2 // TimeSeries.samples
	fLabelName       = 1
	fLabelValue      = 2
	fSampleValue     = 1
	fSampleTimestamp = 2
)

// appendWriteRequest appends the WriteRequest of fams (each sample stamped tsMS, with
// extra labels) to dst, as a scrape would store them: a histogram as its _bucket (le),
// _sum and _count series. It returns the samples written.
func appendWriteRequest(dst []byte, fams []*dto.MetricFamily, extra map[string]string, tsMS int64) ([]byte, int) {
	n := 0
	series := func(name string, labels []*dto.LabelPair, le string, v float64) {
		ls := [][2]string{{"__name__", name}}
		for k, val := range extra {
			ls = append(ls, [2]string{k, val})
		}
		for _, lp := range labels {
			ls = append(ls, [2]string{lp.GetName(), lp.GetValue()})
		}
		if le != "" {
			ls = append(ls, [2]string{"le", le})
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i][0] < ls[j][0] })
		var ts []byte
		for _, l := range ls {
			var lb []byte
			lb = protowire.AppendTag(lb, fLabelName, protowire.BytesType)
			lb = protowire.AppendString(lb, l[0])
			lb = protowire.AppendTag(lb, fLabelValue, protowire.BytesType)
			lb = protowire.AppendString(lb, l[1])
			ts = protowire.AppendTag(ts, fSeriesLabels, protowire.BytesType)
			ts = protowire.AppendBytes(ts, lb)
		}
		var sb []byte
		sb = protowire.AppendTag(sb, fSampleValue, protowire.Fixed64Type)
		sb = protowire.AppendFixed64(sb, math.Float64bits(v))
		sb = protowire.AppendTag(sb, fSampleTimestamp, protowire.VarintType)
		sb = protowire.AppendVarint(sb, uint64(tsMS))
		ts = protowire.AppendTag(ts, fSeriesSamples, protowire.BytesType)
		ts = protowire.AppendBytes(ts, sb)
		dst = protowire.AppendTag(dst, fWriteTimeseries, protowire.BytesType)
		dst = protowire.AppendBytes(dst, ts)
		n++
	}
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				series(name, m.Label, "", m.Counter.GetValue())
			case m.Gauge != nil:
				series(name, m.Label, "", m.Gauge.GetValue())
			case m.Histogram != nil:
				h := m.Histogram
				for _, b := range h.Bucket {
					series(name+"_bucket", m.Label, strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64), float64(b.GetCumulativeCount()))
				}
				series(name+"_bucket", m.Label, "+Inf", float64(h.GetSampleCount()))
				series(name+"_sum", m.Label, "", h.GetSampleSum())
				series(name+"_count", m.Label, "", float64(h.GetSampleCount()))
			}
		}
	}
	return dst, n
}
