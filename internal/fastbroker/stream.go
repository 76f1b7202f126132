package fastbroker

import (
	"math"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// stream encodes the PUBLISH packets streamed to one subscriber. It is owned by the subscriber's
// streaming goroutine.
type stream struct {
	v       codec.Version
	pub     codec.Publish // QoS 0 on the subscriber's topic; Payload changes per message
	payload func(seq uint32, dst []byte) []byte
	scratch []byte // the payload being encoded, reused
	fixed   []byte // the whole packet, encoded once, when the payload does not change
	seq     uint32
}

func newStream(v codec.Version, topic []byte, payload func(uint32, []byte) []byte) *stream {
	st := &stream{v: v, payload: payload}
	st.pub.Topic = topic
	if payload == nil {
		st.pub.Payload = DefaultPayload
		st.fixed = codec.AppendPublish(nil, &st.pub, v)
	}
	return st
}

// appendBatch appends up to max messages to dst, stopping once dst holds batchBytes, and
// returns the extended slice and the number of messages appended.
func (st *stream) appendBatch(dst []byte, max int) ([]byte, int) {
	n := 0
	for n < max && len(dst) < batchBytes {
		if st.fixed != nil {
			dst = append(dst, st.fixed...)
		} else {
			st.scratch = st.payload(st.seq, st.scratch[:0])
			st.pub.Payload = st.scratch
			dst = codec.AppendPublish(dst, &st.pub, st.v)
		}
		st.seq++
		n++
	}
	return dst, n
}

// streamer is the goroutine that writes a subscriber's stream.
type streamer struct {
	c  *conn
	st *stream
}

func newStreamer(c *conn) *streamer {
	return &streamer{c: c, st: newStream(c.v, c.topic, c.s.opts.Payload)}
}

// run writes the reader's pending replies and batches of messages until StreamCount messages
// are out, a write fails or the connection closes. A blocked write parks the goroutine in the
// network poller, so a subscriber that does not read costs no CPU.
func (w *streamer) run() {
	s, c := w.c.s, w.c
	defer s.wg.Done()
	rate := s.opts.StreamRate
	left := s.opts.StreamCount
	if left <= 0 {
		left = math.MaxInt
	}
	buf := make([]byte, 0, 2*batchBytes)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	start := time.Now()
	sent := 0
	for {
		c.wmu.Lock()
		buf, c.pending = c.pending, buf[:0]
		c.drained.Signal()
		if left == 0 {
			// Write the last replies while holding wmu, so that the reader's next direct
			// write comes after them.
			c.streaming = false
			c.drained.Broadcast()
			if len(buf) > 0 {
				_, _ = c.nc.Write(buf) // on failure the reader's next read or write fails too
			}
			c.wmu.Unlock()
			return
		}
		c.wmu.Unlock()
		due := left
		if rate > 0 {
			due = min(due, int(time.Since(start).Seconds()*rate)+1-sent) // message k is due at k/rate
		}
		n := 0
		if due > 0 {
			buf, n = w.st.appendBatch(buf, due)
		}
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				c.wmu.Lock()
				c.streaming = false
				c.drained.Broadcast()
				c.wmu.Unlock()
				_ = c.nc.Close() // unblock the reader
				return
			}
			s.streamed.Add(uint64(n))
			sent += n
			left -= n
			continue
		}
		timer.Reset(time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))))
		select {
		case <-timer.C:
		case <-c.wake:
		case <-c.done:
			return
		}
	}
}

// topicFor returns the topic streamed for filter: the filter without a "$share/group/" prefix
// and with each "+" or "#" level replaced by "x". It allocates the result.
func topicFor(filter []byte) []byte {
	f := string(filter)
	if len(f) > 7 && f[:7] == "$share/" {
		for i := 7; i < len(f); i++ {
			if f[i] == '/' {
				f = f[i+1:]
				break
			}
		}
	}
	t := make([]byte, 0, len(f))
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '+', '#':
			t = append(t, 'x')
		default:
			t = append(t, f[i])
		}
	}
	return t
}
