package study

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mqblast/mqblast/internal/strictjson"
)

// builtinFS holds the built-in campaigns, one JSON file each, named after the campaign.
//
//go:embed builtin/*.json
var builtinFS embed.FS

// BuiltinNames returns the names of the built-in campaigns, sorted.
func BuiltinNames() []string { return strictjson.Names(builtinFS, "builtin") }

// BuiltinJSON returns the file of the built-in campaign name.
func BuiltinJSON(name string) ([]byte, bool) { return strictjson.File(builtinFS, "builtin", name) }

// ErrNotFound is returned by Resolve for an argument that is neither a file nor a
// built-in campaign.
var ErrNotFound = errors.New("no such file or built-in campaign")

// Resolve returns the campaign an argument names: an existing file, else a built-in
// campaign; its scenario paths are relative to the file (a built-in's to the working
// directory).
func Resolve(arg string) (*Campaign, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return Load(arg)
	}
	if data, ok := BuiltinJSON(arg); ok {
		return Parse(arg, ".", data)
	}
	if strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".json") {
		return Load(arg)
	}
	return nil, fmt.Errorf("campaign %q: %w%s (mqblast study --list lists the built-ins)", arg, ErrNotFound, suggest(arg, BuiltinNames()))
}
