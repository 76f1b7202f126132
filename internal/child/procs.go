package child

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Proc is what Procs reads of a process from /proc/PID/stat.
type Proc struct {
	PID, PPID, Pgrp int
	State           byte   // R, S, D, Z ...
	Comm            string // the command's name, as the kernel keeps it (15 bytes at most)
}

// Procs reads every process's state, parent and process group; nil when /proc cannot be
// read.
func Procs() []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Proc
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		j := strings.IndexByte(s, '(')
		if i < 0 || j < 0 || j > i {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || len(f[0]) == 0 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, Proc{PID: n, PPID: ppid, Pgrp: pgrp, State: f[0][0], Comm: s[j+1 : i]})
	}
	return out
}

// GroupLeft returns the processes of group pg that are left, zombies aside: a process
// whose parent died with it is reaped by init, which may take its time, and kill(-pg, 0)
// counts it.
func GroupLeft(pg int) []Proc {
	if syscall.Kill(-pg, 0) != nil {
		return nil
	}
	var left []Proc
	for _, p := range Procs() {
		if p.Pgrp == pg && p.State != 'Z' {
			left = append(left, p)
		}
	}
	return left
}
