package tuning

import "golang.org/x/sys/unix"

// ProcessNoFile returns this process's RLIMIT_NOFILE. Go raises the soft limit to the hard
// one when a program starts, so Soft equals Hard here unless something lowered it since.
func ProcessNoFile() (NoFile, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return NoFile{}, err
	}
	return NoFile{Soft: rl.Cur, Hard: rl.Max}, nil
}

// RaiseNoFile raises this process's RLIMIT_NOFILE soft limit, and the hard one if needed, to
// at least want. Raising the hard limit needs CAP_SYS_RESOURCE and want <= fs.nr_open. It
// returns the limit in force afterwards.
func RaiseNoFile(want uint64) (NoFile, error) {
	cur, err := ProcessNoFile()
	if err != nil || cur.Soft >= want {
		return cur, err
	}
	rl := unix.Rlimit{Cur: want, Max: max(cur.Hard, want)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return cur, err
	}
	return ProcessNoFile()
}
