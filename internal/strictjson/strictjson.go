// Package strictjson decodes the project's hand-written JSON files (scenarios, campaigns)
// into generic values while keeping what encoding/json's map decoding loses: the order of
// an object's keys (sweep keys name cells in file order), an error for a duplicate key,
// and positions as "line L, column C" for every syntax error.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Object is a JSON object with its keys in file order; Vals[i] is the value of Keys[i].
type Object struct {
	Keys []string
	Vals []any
}

// Get returns the value of key.
func (o *Object) Get(key string) (any, bool) {
	for i, k := range o.Keys {
		if k == key {
			return o.Vals[i], true
		}
	}
	return nil, false
}

// MaxDepth bounds nesting: the files are a few levels deep.
const MaxDepth = 32

// Parse decodes data, one JSON value, into *Object, []any, json.Number, string, bool and
// nil values.
func Parse(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, data, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: unexpected data after the JSON value", Where(data, dec.InputOffset()))
	}
	return v, nil
}

func parseValue(dec *json.Decoder, data []byte, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%s: nested more than %d deep", Where(data, dec.InputOffset()), MaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(data, dec, err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		obj := &Object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, syntaxError(data, dec, err)
			}
			key, _ := kt.(string)
			if _, dup := obj.Get(key); dup {
				return nil, fmt.Errorf("%s: duplicate field %q", Where(data, dec.InputOffset()), key)
			}
			v, err := parseValue(dec, data, depth+1)
			if err != nil {
				return nil, err
			}
			obj.Keys = append(obj.Keys, key)
			obj.Vals = append(obj.Vals, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, syntaxError(data, dec, err)
		}
		return obj, nil
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := parseValue(dec, data, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, syntaxError(data, dec, err)
		}
		return arr, nil
	}
	return nil, fmt.Errorf("%s: unexpected %q", Where(data, dec.InputOffset()), d)
}

func syntaxError(data []byte, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %s", Where(data, se.Offset), strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if len(bytes.TrimSpace(data)) == 0 {
			return errors.New("empty file (want a JSON object)")
		}
		return fmt.Errorf("%s: unexpected end of file", Where(data, int64(len(data))))
	}
	return fmt.Errorf("%s: %w", Where(data, dec.InputOffset()), err)
}

// Where names byte offset off of data as "line L, column C" (both from 1).
func Where(data []byte, off int64) string {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}
