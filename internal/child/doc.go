// Package child starts this program again as a child process (the same binary with other
// arguments), waits for the line by which the child says it is ready, and stops it with a
// signal, killing it when it has not ended after a timeout. It is the one supervisor of the
// processes mqblast starts of itself: the worker processes of a run, the embedded broker,
// the sink's processes.
//
// It promises that a Process's output stream stays readable after the child has exited
// (what the child wrote before exiting is not lost to Wait), and that Stop returns only
// once the child has exited.
//
// It must not know what the children do: their arguments, ready lines and output are the
// caller's. It never prints.
package child
