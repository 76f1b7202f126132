package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mqblast/mqblast/result"
)

// TestRemoteRefusedNotRetried: a 400 is an answer no retry changes: one attempt, the push
// failed, its status in last_error; a 503 is retried up to the tries.
func TestRemoteRefusedNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code          int
		attempts      int64
		retries, fail int64
	}{{http.StatusBadRequest, 1, 0, 1}, {http.StatusServiceUnavailable, 3, 2, 1}} {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			http.Error(w, "no", tc.code)
		}))
		rm, err := NewRemote(NewLive(1, 1), RemoteOptions{URL: srv.URL, Tries: 3})
		if err != nil {
			t.Fatal(err)
		}
		rw := rm.Finish(time.Now(), 5*time.Second)
		srv.Close()
		if n.Load() != tc.attempts || rw.Retries != tc.retries || rw.Failed != tc.fail || rw.Pushes != 1 ||
			!strings.Contains(rw.LastError, fmt.Sprintf("HTTP %d", tc.code)) {
			t.Errorf("HTTP %d: %d attempts, %+v; want %d attempts, %d retries", tc.code, n.Load(), *rw, tc.attempts, tc.retries)
		}
	}
}

// TestRemoteQueueBounded: while the receiver holds a push, the interval loop's pushes never
// wait: past the queue the oldest waiting is dropped, the newest kept, and every push is
// counted once (pushes = sent + failed + dropped).
func TestRemoteQueueBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var bodies atomic.Int64
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		b, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, b)
		if err != nil || r.Header.Get("Content-Encoding") != "snappy" {
			http.Error(w, "not snappy", http.StatusBadRequest)
			return
		}
		last.Store(published(raw))
		bodies.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	l := NewLive(1, 1)
	rm, err := NewRemote(l, RemoteOptions{URL: srv.URL, Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 10 {
		s := result.NewSnapshot()
		s.Published = 1
		if err := l.Interval(result.Interval{TS: float64(i + 1)}, s); err != nil {
			t.Fatal(err)
		}
		rm.Push(time.Now())
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("10 pushes took %v with the receiver holding one", took)
	}
	close(release)
	for deadline := time.Now().Add(5 * time.Second); rm.sent.Load()+rm.dropped.Load() < 10; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not empty: %d sent, %d dropped", rm.sent.Load(), rm.dropped.Load())
		}
	}
	if v, _ := last.Load().(float64); v != 10 { // before the end's push, which has the same total
		t.Errorf("the last interval's push received says %v published, want the newest total 10", v)
	}
	rw := rm.Finish(time.Now(), 5*time.Second)
	if rw.Pushes != 11 || rw.Sent+rw.Failed+rw.Dropped != rw.Pushes || rw.Dropped < 6 || rw.Sent != bodies.Load() {
		t.Errorf("remote_write %+v, %d bodies received", *rw, bodies.Load())
	}
}

// published decodes a WriteRequest and returns mqblast_messages_published_total's sample.
func published(b []byte) float64 {
	field := func(b []byte, want protowire.Number, f func(v []byte)) {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			b = b[n:]
			if typ == protowire.BytesType {
				v, m := protowire.ConsumeBytes(b)
				if num == want {
					f(v)
				}
				b = b[m:]
				continue
			}
			b = b[protowire.ConsumeFieldValue(num, typ, b):]
		}
	}
	out := -1.0
	field(b, fWriteTimeseries, func(ts []byte) {
		name := ""
		field(ts, fSeriesLabels, func(l []byte) {
			var k, v string
			field(l, fLabelName, func(x []byte) { k = string(x) })
			field(l, fLabelValue, func(x []byte) { v = string(x) })
			if k == "__name__" {
				name = v
			}
		})
		if name != "mqblast_messages_published_total" {
			return
		}
		field(ts, fSeriesSamples, func(s []byte) {
			for len(s) > 0 {
				num, typ, n := protowire.ConsumeTag(s)
				s = s[n:]
				if num == fSampleValue && typ == protowire.Fixed64Type {
					v, _ := protowire.ConsumeFixed64(s)
					out = math.Float64frombits(v)
				}
				s = s[protowire.ConsumeFieldValue(num, typ, s):]
			}
		})
	})
	return out
}
