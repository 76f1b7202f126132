package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// object is a JSON object that keeps its keys in file order: sweep keys name the cells,
// so their order must be the file's.
type object struct {
	keys []string
	vals []any
}

func (o *object) get(key string) (any, bool) {
	for i, k := range o.keys {
		if k == key {
			return o.vals[i], true
		}
	}
	return nil, false
}

const maxDepth = 32

// parseJSON decodes data into *object, []any, json.Number, string, bool and nil values.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, data, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: unexpected data after the JSON value", where(data, dec.InputOffset()))
	}
	return v, nil
}

func parseValue(dec *json.Decoder, data []byte, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested more than %d deep", where(data, dec.InputOffset()), maxDepth)
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
		obj := &object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, syntaxError(data, dec, err)
			}
			key, _ := kt.(string)
			if _, dup := obj.get(key); dup {
				return nil, fmt.Errorf("%s: duplicate field %q", where(data, dec.InputOffset()), key)
			}
			v, err := parseValue(dec, data, depth+1)
			if err != nil {
				return nil, err
			}
			obj.keys = append(obj.keys, key)
			obj.vals = append(obj.vals, v)
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
	return nil, fmt.Errorf("%s: unexpected %q", where(data, dec.InputOffset()), d)
}

func syntaxError(data []byte, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %s", where(data, se.Offset), strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if len(bytes.TrimSpace(data)) == 0 {
			return errors.New("empty file (want a JSON object)")
		}
		return fmt.Errorf("%s: unexpected end of file", where(data, int64(len(data))))
	}
	return fmt.Errorf("%s: %w", where(data, dec.InputOffset()), err)
}

// where names a byte offset as line:column.
func where(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// show renders a value for a message the way it would appear in the file.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case []any:
		return "an array"
	case *object:
		return "an object"
	}
	return fmt.Sprint(v)
}

// setText turns a sweep or set value into the text --set takes.
func setText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}
