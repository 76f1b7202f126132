package strictjson

import (
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Names returns the names of the JSON files in dir of fsys (a package's embedded built-in
// files, one a scenario or campaign named after its file), without ".json", sorted.
func Names(fsys fs.FS, dir string) []string {
	entries, _ := fs.ReadDir(fsys, dir)
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// File returns the file name+".json" in dir of fsys, false when there is none or name
// holds a path separator.
func File(fsys fs.FS, dir, name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") {
		return nil, false
	}
	data, err := fs.ReadFile(fsys, path.Join(dir, name+".json"))
	return data, err == nil
}
