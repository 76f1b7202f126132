package main

import (
	"io"

	"github.com/mqblast/mqblast/internal/atomicfile"
)

// writeFile writes a file through a temporary file and a rename, so an interrupted write
// never leaves half a document.
func writeFile(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, 0, write)
}
