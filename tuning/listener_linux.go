package tuning

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// FindListener returns the pid of the local process listening on TCP port, the lowest when
// several do (a fork, or SO_REUSEPORT); FindListeners says how it searches.
func FindListener(ctx context.Context, port int) (int, error) {
	l, err := FindListeners(ctx, port)
	if err != nil {
		return 0, err
	}
	return l.PIDs[0], nil
}

// FindListeners finds the local processes holding a socket that listens on TCP port (any
// local address, IPv4 or IPv6) in this process's network namespace: one for most brokers,
// several for one that listens from several processes (SO_REUSEPORT, as mqblast sink --procs
// does) or shares its socket with forks.
//
// Its work does not grow with the host's connections: the listening sockets and their inodes
// come from the kernel's socket diagnostics (NETLINK_SOCK_DIAG, the LISTEN state only; a
// streaming read of /proc/net/tcp and tcp6 where that is refused), then processes are
// searched for those inodes in order of their descriptor tables' size (FDSize), smallest
// first, each one's descriptors read a chunk at a time and no further than needed. Once
// every listening socket has a holder, only holders' parents and children are searched (a
// socket passes between processes by fork, or to a child); a process holding a hundred
// thousand connections beside the broker is then never read. It stops at ctx's end or after
// ListenerSearchLimit, whichever is first, with what it has and an error that wraps ctx's.
//
// It fails when nothing listens on port, or when the socket belongs to no process we can see
// (other users' descriptors need root); Listeners tells how far it searched either way.
func FindListeners(ctx context.Context, port int) (Listeners, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, ListenerSearchLimit)
	defer cancel()
	var l Listeners
	inodes, err := listenSockets(ctx, port)
	if err != nil {
		return l, fmt.Errorf("cannot find the listener on TCP port %d: %w", port, err)
	}
	if len(inodes) == 0 {
		return l, fmt.Errorf("nothing listens on TCP port %d", port)
	}
	l.Sockets = len(inodes)
	procs, err := processTables(ctx)
	if err != nil {
		return l, fmt.Errorf("cannot find the listener on TCP port %d: %w", port, err)
	}
	slices.SortFunc(procs, func(a, b procEntry) int {
		if a.fdSize != b.fdSize {
			return a.fdSize - b.fdSize
		}
		return a.pid - b.pid
	})
	held := map[uint64]bool{}
	owner, ownerParent := map[int]bool{}, map[int]bool{}
	searched := make([]bool, len(procs))
	r := fdReader{}
	for more := true; more; { // a holder found late makes earlier relatives worth a look
		more = false
		for i, p := range procs {
			if searched[i] || len(held) == len(inodes) && !owner[p.ppid] && !ownerParent[p.pid] {
				continue
			}
			searched[i], more = true, true
			found, err := r.search(ctx, p.pid, inodes, held)
			if cerr := ctx.Err(); cerr != nil {
				l.FDs = r.n
				l.fill(owner, searched)
				return l, fmt.Errorf("the search for the process listening on TCP port %d stopped after %v (%d processes, %d descriptors read): %w",
					port, time.Since(start).Round(time.Millisecond), l.Searched, l.FDs, cerr)
			}
			if err == nil {
				l.Searched++
			}
			if found {
				owner[p.pid], ownerParent[p.ppid] = true, true
			}
		}
	}
	l.FDs = r.n
	l.fill(owner, searched)
	if len(l.PIDs) > 0 {
		return l, nil
	}
	return l, fmt.Errorf("TCP port %d is listened on (%d socket(s)) but by no process we can see (run as root to see other users' processes)",
		port, len(inodes))
}

func (l *Listeners) fill(owner map[int]bool, searched []bool) {
	for pid := range owner {
		l.PIDs = append(l.PIDs, pid)
	}
	slices.Sort(l.PIDs)
	for _, s := range searched {
		if !s {
			l.Skipped++
		}
	}
}

// procEntry is a process as the search orders it: by the size of its descriptor table.
type procEntry struct{ pid, ppid, fdSize int }

// processTables lists the processes of /proc with their parent and FDSize (the slots of
// the descriptor table, at least the number of open descriptors), from /proc/PID/status.
// A process without a descriptor table (a kernel thread, a zombie) is left out.
func processTables(ctx context.Context) ([]procEntry, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []procEntry
	buf := make([]byte, 4096) // PPid and FDSize are in the first dozen lines
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			pid, perr := strconv.Atoi(name)
			if perr != nil {
				continue
			}
			if e, ok := readProcEntry(pid, buf); ok {
				out = append(out, e)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func readProcEntry(pid int, buf []byte) (procEntry, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procEntry{}, false // gone
	}
	n, _ := io.ReadFull(f, buf)
	f.Close()
	e := procEntry{pid: pid}
	for b := buf[:n]; len(b) > 0; {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		name, v, _ := bytes.Cut(line, []byte{':'})
		switch string(name) {
		case "PPid":
			e.ppid, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		case "FDSize":
			e.fdSize, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			return e, e.fdSize > 0
		}
	}
	return e, false
}

// fdReader reads processes' descriptors, counting them (n), with buffers reused.
type fdReader struct {
	n    int
	link [64]byte
}

// fdChunk is how many descriptors are read between two looks at the context.
const fdChunk = 256

// search reads pid's descriptors, in increasing order, for sockets of inodes, marking the
// ones it finds in held. It stops once it has found one and every inode is held. It fails
// when pid's descriptors cannot be read (gone, or not ours to see) or ctx ends.
func (r *fdReader) search(ctx context.Context, pid int, inodes, held map[uint64]bool) (found bool, err error) {
	d, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return false, err
	}
	defer d.Close()
	dfd := int(d.Fd())
	for {
		if err := ctx.Err(); err != nil {
			return found, err
		}
		names, err := d.Readdirnames(fdChunk)
		for _, name := range names {
			r.n++
			n, lerr := unix.Readlinkat(dfd, name, r.link[:])
			if lerr != nil {
				continue // closed since
			}
			if ino, ok := socketInode(r.link[:n]); ok && inodes[ino] {
				held[ino], found = true, true
				if len(held) == len(inodes) {
					return true, nil
				}
			}
		}
		if err == io.EOF {
			return found, nil
		}
		if err != nil {
			return found, err
		}
	}
}

// socketInode reads a descriptor's link "socket:[12345]".
func socketInode(link []byte) (uint64, bool) {
	digits, ok := bytes.CutPrefix(link, []byte("socket:["))
	if !ok || len(digits) < 2 || digits[len(digits)-1] != ']' {
		return 0, false
	}
	var v uint64
	for _, c := range digits[:len(digits)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// listenSockets returns the inodes of the TCP sockets listening on port, IPv4 and IPv6:
// from the kernel's socket diagnostics, else from /proc/net/tcp and tcp6.
func listenSockets(ctx context.Context, port int) (map[uint64]bool, error) {
	if inodes, err := diagListeners(port); err == nil {
		return inodes, nil
	}
	inodes := map[uint64]bool{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := procNetListeners(ctx, name, port, inodes); err != nil {
			if name == "/proc/net/tcp6" && errors.Is(err, os.ErrNotExist) {
				continue // IPv6 disabled
			}
			return nil, err
		}
	}
	return inodes, nil
}

// tcpListen is the kernel's TCP_LISTEN state (0A in /proc/net/tcp).
const tcpListen = 10

// diagListeners asks the kernel's inet_diag (NETLINK_SOCK_DIAG) for its TCP sockets in the
// LISTEN state, IPv4 and IPv6, and returns the inodes of those on port. For such a request
// the kernel walks only its listening sockets: the work does not grow with connections.
func diagListeners(port int) (map[uint64]bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) //nolint:errcheck
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1}); err != nil {
		return nil, err
	}
	inodes := map[uint64]bool{}
	buf := make([]byte, 32<<10)
	for i, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		err := diagDump(fd, uint32(i+1), family, port, buf, inodes)
		if err != nil && family == unix.AF_INET6 && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EAFNOSUPPORT)) {
			break // IPv6 disabled
		}
		if err != nil {
			return nil, err
		}
	}
	return inodes, nil
}

// diagDump sends one inet_diag_req_v2 for family's listening TCP sockets and reads the
// replies (struct inet_diag_msg) up to NLMSG_DONE.
func diagDump(fd int, seq uint32, family uint8, port int, buf []byte, inodes map[uint64]bool) error {
	const hdr, reqLen = unix.SizeofNlMsghdr, unix.SizeofNlMsghdr + 56
	req := make([]byte, reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], reqLen)
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], seq)
	req[hdr], req[hdr+1] = family, unix.IPPROTO_TCP // sdiag_family, sdiag_protocol
	ne.PutUint32(req[hdr+4:], 1<<tcpListen)         // idiag_states
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		for b := buf[:n]; len(b) >= hdr; {
			l := int(ne.Uint32(b))
			if l < hdr || l > len(b) {
				return errors.New("a netlink message runs past its datagram")
			}
			if ne.Uint32(b[8:]) == seq {
				switch ne.Uint16(b[4:]) {
				case unix.NLMSG_DONE:
					return nil
				case unix.NLMSG_ERROR:
					if l < hdr+4 {
						return errors.New("a short netlink error")
					}
					if errno := -int32(ne.Uint32(b[hdr:])); errno != 0 {
						return syscall.Errno(errno)
					}
					return nil
				case unix.SOCK_DIAG_BY_FAMILY:
					// inet_diag_msg: family, state, timer, retrans; id (sport and dport big-endian,
					// addresses, interface, cookie) at 4..52; expires, rqueue, wqueue, uid; inode at 68.
					if m := b[hdr:l]; len(m) >= 72 && m[1] == tcpListen && int(binary.BigEndian.Uint16(m[4:])) == port {
						if ino := ne.Uint32(m[68:]); ino != 0 {
							inodes[uint64(ino)] = true
						}
					}
				}
			}
			b = b[min(len(b), (l+3)&^3):]
		}
	}
}

// procNetListeners adds to inodes those of the rows of a /proc/net/tcp{,6} file in state 0A
// (LISTEN) whose local port is port, reading it a line at a time: with a million sockets the
// file is some 150 MB. A row: "sl local_address rem_address st … uid timeout inode",
// local_address "0100007F:075B" (port in hex).
func procNetListeners(ctx context.Context, name string, port int, inodes map[uint64]bool) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for row := 0; ; row++ {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a row of 64 KiB is none of this file's: skip it
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			line = nil
		}
		if row > 0 { // the header
			if ino, ok := listenRow(line, port); ok {
				inodes[ino] = true
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if row%4096 == 4095 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// listenRow returns the inode of a /proc/net/tcp row in state 0A on port.
func listenRow(line []byte, port int) (uint64, bool) {
	var f [10][]byte
	n := 0
	for rest := line; n < len(f); n++ {
		rest = bytes.TrimLeft(rest, " \t")
		i := bytes.IndexAny(rest, " \t\n")
		if i < 0 {
			i = len(rest)
		}
		if i == 0 {
			break
		}
		f[n], rest = rest[:i], rest[i:]
	}
	if n < len(f) || string(f[3]) != "0A" {
		return 0, false
	}
	_, hexPort, ok := bytes.Cut(f[1], []byte{':'})
	if !ok {
		return 0, false
	}
	if p, err := strconv.ParseUint(string(hexPort), 16, 16); err != nil || int(p) != port {
		return 0, false
	}
	ino, err := strconv.ParseUint(string(f[9]), 10, 64)
	return ino, err == nil && ino != 0
}
