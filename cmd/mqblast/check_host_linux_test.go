package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// hostInts reads the integers of a file under /proc/sys on this host.
func hostInts(t *testing.T, key string) ([]int64, error) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// TestCheckMillionLocal runs `mqblast check` and `mqblast tune apply --dry-run` for a
// million connections to a broker on this host (--local-broker) against this host's own
// values: the conntrack table and tcp_mem are each held against what the run needs, and
// where this host falls short (here: nf_conntrack_max 262144, tcp_mem pressure 383858 pages)
// the check fails them with the sysctl that fixes them, and tune apply would set it.
func TestCheckMillionLocal(t *testing.T) {
	run := []string{"-c", "1000000", "--local-broker"}
	out, _, err := runCLI(t, append([]string{"check", "--format", "json"}, run...)...)
	var doc struct {
		Findings []struct {
			Name, Current, Needed, Verdict string
			Fix                            []string
		} `json:"findings"`
	}
	if jerr := json.Unmarshal([]byte(out), &doc); jerr != nil {
		t.Fatalf("check %q: %v (%v)\n%s", run, jerr, err, out)
	}
	type finding = struct {
		Name, Current, Needed, Verdict string
		Fix                            []string
	}
	find := func(name string) finding {
		for _, f := range doc.Findings {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("no %s finding in\n%s", name, out)
		return finding{}
	}
	dry, code, err := runCLI(t, append([]string{"tune", "apply", "--dry-run"}, run...)...)
	if code != exitOK {
		t.Fatalf("tune apply --dry-run: exit %d: %v", code, err)
	}
	t.Logf("tune apply --dry-run:\n%s", dry)
	flagged := 0

	// nf_conntrack_max: a million more entries than are tracked now.
	ct, err := hostInts(t, "net.netfilter.nf_conntrack_max")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if f := find("nf_conntrack"); f.Current != "not loaded" || f.Verdict != "ok" {
			t.Errorf("conntrack not loaded here, but the finding is %+v", f)
		}
	case err != nil:
		t.Fatal(err)
	default:
		f := find("net.netfilter.nf_conntrack_max")
		t.Logf("%+v", f)
		var need, tracked int64
		if _, err := fmt.Sscanf(f.Needed, ">= %d (%d tracked + 1000000)", &need, &tracked); err != nil || need != tracked+1_000_000 {
			t.Fatalf("needed %q: want >= tracked + 1000000 (%v)", f.Needed, err)
		}
		if !strings.HasPrefix(f.Current, strconv.FormatInt(ct[0], 10)+" (") {
			t.Errorf("current %q, want this host's %d", f.Current, ct[0])
		}
		if ct[0] >= need {
			if f.Verdict != "ok" || strings.Contains(dry, "net.netfilter.nf_conntrack_max") {
				t.Errorf("nf_conntrack_max %d >= %d: verdict %s, and the dry run:\n%s", ct[0], need, f.Verdict, dry)
			}
			break
		}
		flagged++
		fix := fmt.Sprintf("sysctl -w net.netfilter.nf_conntrack_max=%d", max(need, 1<<20))
		if f.Verdict != "fail" || len(f.Fix) == 0 || f.Fix[0] != fix {
			t.Errorf("nf_conntrack_max %d < %d: verdict %s, fix %q; want fail, %q", ct[0], need, f.Verdict, f.Fix, fix)
		}
		m := regexp.MustCompile(fmt.Sprintf(`would set net\.netfilter\.nf_conntrack_max: %d -> (\d+)\n`, ct[0])).FindStringSubmatch(dry)
		if v, _ := strconv.ParseInt(m2(m), 10, 64); v < 1_000_000 {
			t.Errorf("tune apply would not set nf_conntrack_max from %d to a million or more", ct[0])
		}
	}

	// tcp_mem: the pages a million connections' buffers take, both ends being here.
	tm, err := hostInts(t, "net.ipv4.tcp_mem")
	if err != nil || len(tm) != 3 {
		t.Fatalf("tcp_mem %v: %v", tm, err)
	}
	f := find("net.ipv4.tcp_mem")
	t.Logf("%+v", f)
	var need, used int64
	var size string
	if _, err := fmt.Sscanf(f.Needed, "pressure >= %d pages (%s %s %d in use)", &need, &size, new(string), &used); err != nil {
		t.Fatalf("needed %q: %v", f.Needed, err)
	}
	if pages := int64(2*1_000_000*4096) / int64(os.Getpagesize()); need-used != pages {
		t.Errorf("needed %q: %d pages beside those in use, want %d (4 KiB a connection, both ends)", f.Needed, need-used, pages)
	}
	if want := fmt.Sprintf("%d %d %d (max ", tm[0], tm[1], tm[2]); !strings.HasPrefix(f.Current, want) {
		t.Errorf("current %q, want this host's %q…", f.Current, want)
	}
	if tm[1] >= need {
		if f.Verdict != "ok" || strings.Contains(dry, "net.ipv4.tcp_mem") {
			t.Errorf("tcp_mem pressure %d >= %d: verdict %s, and the dry run:\n%s", tm[1], need, f.Verdict, dry)
		}
	} else {
		flagged++
		verdict := map[bool]string{true: "warn", false: "fail"}[tm[2] >= need]
		fix := fmt.Sprintf(`sysctl -w net.ipv4.tcp_mem="%d %d %d"`, tm[0], need, max(tm[2], need*3/2))
		if f.Verdict != verdict || len(f.Fix) == 0 || f.Fix[0] != fix {
			t.Errorf("tcp_mem %v against %d pages: verdict %s, fix %q; want %s, %q", tm, need, f.Verdict, f.Fix, verdict, fix)
		}
		m := regexp.MustCompile(fmt.Sprintf(`would set net\.ipv4\.tcp_mem: %d %d %d -> %d (\d+) \d+\n`, tm[0], tm[1], tm[2], tm[0])).FindStringSubmatch(dry)
		if v, _ := strconv.ParseInt(m2(m), 10, 64); v < need-used {
			t.Errorf("tune apply would not raise tcp_mem's pressure from %d to %d or more", tm[1], need-used)
		}
	}
	t.Logf("%d of nf_conntrack_max and tcp_mem flagged on this host", flagged)
}

// m2 is the first group of a regexp match, or "".
func m2(m []string) string {
	if len(m) < 2 {
		return ""
	}
	return m[1]
}
