package sink

import "golang.org/x/sys/unix"

// steer makes the listening sockets' SO_REUSEPORT group, which the listener fd is in, give
// every new connection to its socket at index (the order in which the processes began to
// listen): a classic BPF program that returns the index. The kernel hashes as without a
// program where the index is past the group's sockets.
func steer(fd, index int) error {
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: uint32(index)}}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF,
		&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
}
