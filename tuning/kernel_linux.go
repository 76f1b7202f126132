package tuning

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// SameNetNS reports whether two /proc roots ("/proc/self", "/proc/PID") are in one network
// namespace: their ns/net links name the same namespace. It reports false when either link
// cannot be read.
func SameNetNS(rootA, rootB string) bool {
	a, err := os.Readlink(rootA + "/ns/net")
	if err != nil {
		return false
	}
	b, err := os.Readlink(rootB + "/ns/net")
	return err == nil && a == b
}

// FindListener returns the pid of the local process listening on TCP port (any local
// address, IPv4 or IPv6) in this process's network namespace: the listening sockets come
// from /proc/net/tcp and tcp6 (state 0A), their owner from the socket inodes in /proc/*/fd.
// When several processes listen (a fork, or SO_REUSEPORT), it returns the lowest pid;
// FindListeners returns them all. It fails when nothing listens on port, or when the socket
// belongs to no process we can see (other users' descriptors need root).
func FindListener(port int) (int, error) {
	pids, err := FindListeners(port)
	if err != nil {
		return 0, err
	}
	return pids[0], nil
}

// FindListeners returns the pids, lowest first, of every local process that holds a socket
// listening on TCP port: one for most brokers, several for one that listens from several
// processes (SO_REUSEPORT, as mqblast sink --procs does) or shares its socket with forks.
func FindListeners(port int) ([]int, error) {
	inodes := map[string]bool{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(name)
		if err != nil {
			if name == "/proc/net/tcp6" && os.IsNotExist(err) {
				continue // IPv6 disabled
			}
			return nil, fmt.Errorf("cannot find the listener on TCP port %d: %w", port, err)
		}
		listenInodes(b, port, inodes)
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("nothing listens on TCP port %d (read /proc/net/tcp and tcp6)", port)
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("cannot find the listener on TCP port %d: %w", port, err)
	}
	var pids []int
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	var owners []int
	for _, pid := range pids {
		fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
		f, err := os.Open(fdDir)
		if err != nil {
			continue // gone, or not ours to see
		}
		fds, _ := f.Readdirnames(-1)
		f.Close()
		for _, fd := range fds {
			link, err := os.Readlink(fdDir + "/" + fd)
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				owners = append(owners, pid)
				break
			}
		}
	}
	if len(owners) > 0 {
		return owners, nil
	}
	return nil, fmt.Errorf("TCP port %d is listened on (socket inode %s) but by no process we can see (run as root to see other users' processes)",
		port, strings.Join(slices.Sorted(maps.Keys(inodes)), ", "))
}

// listenInodes adds to inodes the socket inodes of /proc/net/tcp{,6} rows in state 0A
// (LISTEN) whose local port is port. A row: "sl local_address rem_address st … uid timeout
// inode", local_address "0100007F:075B" (port in hex).
func listenInodes(b []byte, port int, inodes map[string]bool) {
	_, b, _ = bytes.Cut(b, []byte{'\n'}) // header
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) < 10 || string(f[3]) != "0A" {
			continue
		}
		_, hexPort, ok := bytes.Cut(f[1], []byte{':'})
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(string(hexPort), 16, 16); err == nil && int(p) == port && string(f[9]) != "0" {
			inodes[string(f[9])] = true
		}
	}
}
