package tuning

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Files that Apply writes, as paths on the host.
const (
	// LimitsFile raises RLIMIT_NOFILE for new PAM logins.
	LimitsFile = "/etc/security/limits.d/90-mqblast.conf"
	// SysctlFile keeps the sysctls across reboots (read by systemd-sysctl and sysctl --system).
	SysctlFile = "/etc/sysctl.d/90-mqblast.conf"
)

// Change is one setting [Apply] writes: a sysctl under /proc/sys or a whole file.
type Change struct {
	// Name is the sysctl key or the file's path on the host.
	Name string `json:"name"`
	// Path is the file written, as a path on the host ("/proc/sys/net/core/somaxconn").
	Path string `json:"path"`
	// Old is the value before the change; for a file that did not exist, "".
	Old string `json:"old"`
	// New is the value written.
	New string `json:"new"`
	// Revert is the exact command that restores Old.
	Revert string `json:"revert"`
	// Note says what else the change takes to have effect, if anything.
	Note string `json:"note,omitempty"`
}

// PlanChanges returns the changes that fix r's findings which Apply can fix: every sysctl
// whose finding is not OK and, when RLIMIT_NOFILE hard is not OK, LimitsFile. With persist,
// it adds SysctlFile holding the new values (and the other keys it held) so they survive a
// reboot. It reads the old values under root and writes nothing.
func PlanChanges(root string, r Report, persist bool) ([]Change, error) {
	var out []Change
	persisted := map[string]string{}
	for _, f := range r.Findings {
		if f.Verdict == OK || f.set == nil {
			continue
		}
		s := f.set
		if s.key == "" {
			ch, err := fileChange(root, s.file, s.value)
			if err != nil {
				return nil, err
			}
			if ch.Old == ch.New {
				continue // written by an earlier apply
			}
			ch.Note = "takes effect at the next login: the hard limit is inherited"
			out = append(out, ch)
			continue
		}
		rel := sysctlPath(s.key)
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("cannot read sysctl %s: %w", s.key, err)
		}
		oldv := strings.Join(strings.Fields(string(old)), " ")
		if oldv == s.value {
			continue
		}
		out = append(out, Change{Name: s.key, Path: "/" + rel, Old: oldv, New: s.value,
			Revert: "sysctl -w " + s.key + "=" + quoteIfSpace(oldv)})
		persisted[s.key] = s.value
	}
	if persist && len(persisted) > 0 {
		ch, err := sysctlFileChange(root, persisted)
		if err != nil {
			return nil, err
		}
		if ch.Old != ch.New {
			out = append(out, ch)
		}
	}
	return out, nil
}

// fileChange plans writing content to the file at rel (slash-separated, under root).
func fileChange(root, rel, content string) (Change, error) {
	path := "/" + rel
	ch := Change{Name: path, Path: path, New: content, Revert: "rm " + path}
	old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Change{}, fmt.Errorf("cannot read %s: %w", path, err)
	default:
		ch.Old = string(old)
		ch.Revert = fmt.Sprintf("printf %%s %s > %s", shellQuote(string(old)), path)
	}
	return ch, nil
}

// sysctlFileChange plans SysctlFile holding set, keeping the lines of other keys it holds.
func sysctlFileChange(root string, set map[string]string) (Change, error) {
	rel := SysctlFile[1:]
	old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Change{}, fmt.Errorf("cannot read %s: %w", SysctlFile, err)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(old), "\n") {
		k, _, _ := strings.Cut(line, "=")
		if _, ok := set[strings.TrimSpace(k)]; ok || strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(line + "\n")
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, set[k])
	}
	ch, err := fileChange(root, rel, b.String())
	ch.Note = "read at boot by systemd-sysctl; sysctl --system reloads it"
	return ch, err
}

// Apply writes changes under root ("/" on a real host) in order and reads each sysctl back.
// It stops at the first error and returns the changes made before it, so that the caller can
// print their revert commands.
func Apply(root string, changes []Change) ([]Change, error) {
	done := make([]Change, 0, len(changes))
	for _, ch := range changes {
		path := filepath.Join(root, filepath.FromSlash(ch.Path[1:]))
		if strings.HasPrefix(ch.Path, "/proc/sys/") {
			if err := os.WriteFile(path, []byte(ch.New+"\n"), 0o644); err != nil {
				return done, fmt.Errorf("cannot set %s to %q: %w", ch.Name, ch.New, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				return done, fmt.Errorf("cannot read back %s: %w", ch.Name, err)
			}
			if g := strings.Join(strings.Fields(string(got)), " "); g != ch.New {
				return append(done, ch), fmt.Errorf("set %s to %q but it reads back %q", ch.Name, ch.New, g)
			}
			done = append(done, ch)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return done, fmt.Errorf("cannot write %s: %w", ch.Path, err)
		}
		if err := os.WriteFile(path, []byte(ch.New), 0o644); err != nil {
			return done, fmt.Errorf("cannot write %s: %w", ch.Path, err)
		}
		done = append(done, ch)
	}
	return done, nil
}

func quoteIfSpace(s string) string {
	if strings.Contains(s, " ") {
		return strconv.Quote(s)
	}
	return s
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
