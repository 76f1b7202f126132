// Package atomicfile writes a file whole or not at all: through a temporary file in the
// same directory and a rename, so that an interrupted write never leaves half a document
// (the result documents and reports of mqblast, a study's index and report).
package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes the file at path with write. The file gets perm, or 0600 (os.CreateTemp's)
// when perm is 0. Every error names path.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mqblast-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	fail := func(err error) error {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := write(tmp); err != nil {
		_ = tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if perm != 0 {
		if err := os.Chmod(tmp.Name(), perm); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}
