package bench

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/result"
)

// TestWorkerStart: Gather writes the start line to every worker once all are ready (the
// instant it is given, or the first whole second startDelay after), each worker's
// AwaitStart reads the instant from it, and Gather closes the workers' stdins.
func TestWorkerStart(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, startAt := range []func() time.Time{func() time.Time { return at }, nil} {
		const n = 3
		var streams []io.Reader
		var starts []io.WriteCloser
		got := make(chan time.Time, n)
		for range n {
			outR, outW := io.Pipe()
			inR, inW := io.Pipe()
			streams, starts = append(streams, outR), append(starts, inW)
			go func() {
				ww := NewWorkerWriter(outW)
				t0, err := ww.AwaitStart(inR)
				if err != nil {
					t.Error(err)
				}
				_ = ww.Final(&result.Result{Schema: result.Schema, Host: result.HostInfo{Procs: 1}}, nil, 0)
				_ = outW.Close()
				if _, err := inR.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
					t.Errorf("stdin after the start line: %v, want EOF once Gather returns", err)
				}
				got <- t0
			}()
		}
		before := time.Now()
		if _, err := Gather(GatherOptions{Streams: streams, Starts: starts, StartAt: startAt, Target: n, Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		for range n {
			t0 := <-got
			switch {
			case startAt != nil && !t0.Equal(at):
				t.Errorf("start %v, want %v", t0, at)
			case startAt == nil && (t0.Before(before.Add(startDelay)) || t0.After(time.Now().Add(startDelay+time.Second)) ||
				!t0.Equal(t0.Truncate(time.Second))):
				t.Errorf("start %v, want the first whole second %v after the workers were ready", t0, startDelay)
			}
		}
	}
}

// TestAwaitStartBadLine: a worker rejects a start line that is not "go UNIXNANO", and a
// parent that ends without one.
func TestAwaitStartBadLine(t *testing.T) {
	for in, want := range map[string]string{"go soon\n": "bad start line", "": "no start from the parent"} {
		var out strings.Builder
		_, err := NewWorkerWriter(&out).AwaitStart(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
		if out.String() != "{\"ready\":true}\n" {
			t.Errorf("%q: wrote %q, want the ready line", in, out.String())
		}
	}
}
