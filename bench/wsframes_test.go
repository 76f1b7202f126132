package bench

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/reactor"
)

// wsFrameCounter is a TCP relay in front of a ws:// broker that reads the client's
// WebSocket frames on their way (after the upgrade's head), unmasks them and counts the
// MQTT packets each holds. It forwards every byte unchanged as it comes.
type wsFrameCounter struct {
	mu             sync.Mutex
	frames, multi  int // client frames, and those holding more than one packet
	packets, most  int // MQTT packets in them, and the most in one frame
	cut, malformed int // frames that ended inside a packet; frames neither masked final binary nor close
	closes         int // close frames
}

// relay starts the relay to broker (host:port) and returns its address.
func (c *wsFrameCounter) relay(t *testing.T, broker string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			cl, err := ln.Accept()
			if err != nil {
				return
			}
			br, err := net.Dial("tcp", broker)
			if err != nil {
				_ = cl.Close()
				continue
			}
			go func() { _, _ = io.Copy(cl, br); _ = cl.Close() }()
			go func() { c.watch(br, cl); _ = br.Close() }()
		}
	}()
	return ln.Addr().String()
}

// watch copies the client's bytes to the broker and counts its frames' packets.
func (c *wsFrameCounter) watch(dst io.Writer, src io.Reader) {
	var in []byte
	head := true
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			in = append(in, buf[:n]...)
			if head {
				i := bytes.Index(in, []byte("\r\n\r\n"))
				if i < 0 {
					continue
				}
				in, head = in[i+4:], false
			}
			in = c.parse(in)
		}
		if err != nil {
			return
		}
	}
}

// parse counts the whole frames at the start of in and returns the rest.
func (c *wsFrameCounter) parse(in []byte) []byte {
	for len(in) >= 2 {
		hlen, plen := 2, int(in[1]&0x7f)
		switch plen {
		case 126:
			hlen = 4
		case 127:
			hlen = 10
		}
		hlen += 4
		if len(in) < hlen {
			break
		}
		switch plen {
		case 126:
			plen = int(binary.BigEndian.Uint16(in[2:]))
		case 127:
			plen = int(binary.BigEndian.Uint64(in[2:]))
		}
		if len(in) < hlen+plen {
			break
		}
		p := make([]byte, plen)
		for i := range p {
			p[i] = in[hlen+i] ^ in[hlen-4+i%4]
		}
		c.count(in[0], in[1]&0x80 != 0, p)
		in = in[hlen+plen:]
	}
	return in
}

func (c *wsFrameCounter) count(b0 byte, masked bool, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames++
	if b0 == 0x88 && masked {
		c.closes++
		return
	}
	if b0 != 0x82 || !masked {
		c.malformed++
		return
	}
	k := 0
	for len(p) > 0 {
		rl, mul, i := 0, 1, 1
		for ; i < len(p) && i <= 4; i++ {
			rl += int(p[i]&0x7f) * mul
			mul <<= 7
			if p[i]&0x80 == 0 {
				break
			}
		}
		if i >= len(p) || 1+i+rl > len(p) {
			c.cut++
			return
		}
		p = p[1+i+rl:]
		k++
	}
	c.packets += k
	c.most = max(c.most, k)
	if k > 1 {
		c.multi++
	}
}

// TestWSBatchedFramesToMosquitto: P2P at QoS 1 over ws:// to Mosquitto at 2,000 msg/s per
// publisher, through a relay that counts the MQTT packets in the client's frames: frames
// hold several packets (a publish pass's PUBLISH, a read's PUBACKs), none cut a packet,
// and Mosquitto takes them all: every message received once and acknowledged. The
// client's frames are binary but for its close frames at the end.
func TestWSBatchedFramesToMosquitto(t *testing.T) {
	if testing.Short() {
		t.Skip("a run against Mosquitto, ~3 s")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{WebSocket: true})
	var c wsFrameCounter
	addr := c.relay(t, m.WSAddr)
	res := runTLS(t, "ws://"+addr+"/mqtt", builtin(t, "quick-p2p-100", map[string]string{
		"publishers.qos": "1", "subscribers.qos": "1", "publishers.client_count": "5", "subscribers.client_count": "5",
		"parameters.publish_rate": "2000", "parameters.duration_sec": "1s", "parameters.warmup_sec": "300ms"}), reactor.TLSOptions{})
	msg := res.Messages
	checkAccounts(t, msg)
	if msg.Published == 0 || msg.Received != msg.Expected || msg.Lost != 0 || msg.Duplicated != 0 || msg.Acked != msg.Published {
		t.Errorf("messages %+v", msg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("client frames %d (%d close), MQTT packets in them %d, frames with more than one %d, most in one %d; published %d, received %d of %d",
		c.frames, c.closes, c.packets, c.multi, c.most, msg.Published, msg.Received, msg.Expected)
	if c.malformed != 0 || c.cut != 0 {
		t.Errorf("%d frames neither masked final binary nor close, %d cutting a packet", c.malformed, c.cut)
	}
	if c.multi == 0 || c.packets < int(msg.Published) {
		t.Errorf("%d frames with more than one packet, %d packets for %d PUBLISH", c.multi, c.packets, msg.Published)
	}
}
