package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeFile writes a file through a temporary file and a rename, so an interrupted write
// never leaves half a document.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mqblast-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := write(tmp); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
