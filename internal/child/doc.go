// Package child starts this program again as a child process (the same binary with other
// arguments), waits for the line by which the child says it is ready, and stops it with a
// signal, killing it when it has not ended after a timeout. It is the one supervisor of the
// processes mqblast starts of itself: the worker processes of a run, the embedded broker,
// the sink's processes; the cells and the brokers of a study and the commands of the
// packet emulator use StartTied and Guard.
//
// It ties every process mqblast starts to mqblast (StartTied), so that none outlives it
// when it is killed (SIGKILL, the OOM killer): the kernel sends the child a signal when its
// parent dies (the parent-death signal), and the child holds the read end of a pipe whose
// write end only the parent holds, which an mqblast child watches (WatchParent: the
// command then winds down as on SIGTERM). A program that is not mqblast cannot watch a
// pipe: Guard is mqblast re-executed as its supervisor, which watches the pipe and ends the
// program's whole process group (a shell and what it started) when the parent is gone.
//
// It promises that a Process's output stream stays readable after the child has exited
// (what the child wrote before exiting is not lost to Wait), and that Stop returns only
// once the child has exited.
//
// It must not know what the children do: their arguments, ready lines and output are the
// caller's. It never prints.
package child
