package tuning

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSelf: the process's own readers answer on Linux: CPU time grows with work, the
// resident set is under its peak, and the kernel release is named.
func TestSelf(t *testing.T) {
	c0 := SelfCPU()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	if c1 := SelfCPU(); c0 <= 0 || c1 <= c0 {
		t.Errorf("CPU time %v, then %v after 50 ms of spinning", c0, c1)
	}
	if rss, peak := SelfRSS(), SelfPeakRSS(); rss <= 0 || peak < rss {
		t.Errorf("rss %d, peak %d", rss, peak)
	}
	if _, ok := SelfRunDelay(); !ok {
		t.Log("no /proc/self/task/*/schedstat (kernel without CONFIG_SCHED_INFO)")
	}
	if KernelRelease() == "" {
		t.Error("no kernel release")
	}
}

// TestSelfAnonRSS: pages of a mapped file that the process reads are resident but not
// anonymous; anonymous pages it writes are both; and the anonymous figure is
// /proc/self/status's RssAnon (read by the kernel's other report, within what the test's
// own reading allocates between the two).
func TestSelfAnonRSS(t *testing.T) {
	const size = 16 << 20
	path := filepath.Join(t.TempDir(), "pages")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck
	chunk := bytes.Repeat([]byte{1}, 64<<10)
	for n := 0; n < size; n += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m) //nolint:errcheck
	debug.FreeOSMemory() // the runtime's scavenger has nothing left to return while the test reads
	rss0, anon0 := SelfRSS(), SelfAnonRSS()
	sum := 0
	for i := 0; i < size; i += os.Getpagesize() {
		sum += int(m[i])
	}
	rss1, anon1 := SelfRSS(), SelfAnonRSS()
	t.Logf("file pages read: rss %+d KiB, anonymous %+d KiB (sum %d)", (rss1-rss0)>>10, (anon1-anon0)>>10, sum)
	if rss1-rss0 < size*9/10 || anon1-anon0 > 2<<20 {
		t.Errorf("after reading %d MiB of a mapped file: rss %+d, anonymous %+d bytes; want rss up by the file, anonymous not",
			size>>20, rss1-rss0, anon1-anon0)
	}
	// private anonymous pages, as the heap's, mapped here so that no freed heap is reused
	heap, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(heap) //nolint:errcheck
	for i := 0; i < size; i += os.Getpagesize() {
		heap[i] = 1
	}
	rss2, anon2 := SelfRSS(), SelfAnonRSS()
	t.Logf("anonymous pages written: rss %+d KiB, anonymous %+d KiB", (rss2-rss1)>>10, (anon2-anon1)>>10)
	if anon2-anon1 < size*9/10 || rss2-rss1 < size*9/10 {
		t.Errorf("after writing %d MiB of anonymous pages: rss %+d, anonymous %+d bytes; want both up by it", size>>20, rss2-rss1, anon2-anon1)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	anon := SelfAnonRSS()
	var want int64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			want = kb << 10
		}
	}
	if want == 0 || anon < want-1<<20 || anon > want+1<<20 {
		t.Errorf("SelfAnonRSS %d, /proc/self/status RssAnon %d", anon, want)
	}
	if n := testing.AllocsPerRun(100, func() { SelfRSS(); SelfAnonRSS() }); n != 0 {
		t.Errorf("a reading allocates %v times", n)
	}
}
