package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mqblast/mqblast/internal/secret"
)

// ReadFile reads and checks one result document: its schema, then its figures
// (CheckDocument), each problem a line naming the file and the field. A password the
// document holds (one written elsewhere, in its scenario or a broker address) is replaced
// by the marker, so that nothing that reads it (report, compare, merge) shows or writes it
// again.
func ReadFile(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read result document: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a result document (mqblast run --out writes one): %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q: not a result document of this mqblast", path, r.Schema, Schema)
	}
	if err := CheckDocument(b); err != nil {
		var lines []string
		for _, l := range strings.Split(err.Error(), "\n") {
			lines = append(lines, path+": "+l)
		}
		return nil, fmt.Errorf("%s\n%s: not a result document as mqblast writes one (changed since?): "+
			"give the file that mqblast run --out or mqblast merge -o wrote", strings.Join(lines, "\n"), path)
	}
	r.Scenario = secret.RedactJSON(r.Scenario, "password")
	for i, b := range r.Broker {
		r.Broker[i] = secret.RedactURL(b)
	}
	return &r, nil
}

// ReadFiles reads and checks the result documents at paths, in their order.
func ReadFiles(paths []string) ([]*Result, error) {
	rs := make([]*Result, 0, len(paths))
	for _, path := range paths {
		r, err := ReadFile(path)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// CheckFiles refuses results that are not the distinct shards of one run: the same
// file given twice, and every problem CheckShards finds, each naming its files.
func CheckFiles(paths []string, rs []*Result) error {
	var errs []error
	infos := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		infos[i], _ = os.Stat(p)
		for j := range i {
			if infos[i] != nil && infos[j] != nil && os.SameFile(infos[i], infos[j]) {
				errs = append(errs, fmt.Errorf("%s and %s: the same file twice", paths[j], p))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot merge: %w", errors.Join(errs...))
	}
	err := CheckShards(rs)
	if err == nil {
		return nil
	}
	var shardErrs []*ShardError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var se *ShardError
			if errors.As(e, &se) {
				shardErrs = append(shardErrs, se)
			}
		}
	}
	for _, se := range shardErrs {
		switch {
		case se.A < 0:
			errs = append(errs, errors.New(se.Msg))
		case se.B < 0:
			errs = append(errs, fmt.Errorf("%s: %s", paths[se.A], se.Msg))
		default:
			errs = append(errs, fmt.Errorf("%s and %s: %s", paths[se.A], paths[se.B], se.Msg))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, err)
	}
	return fmt.Errorf("cannot merge: not the distinct shards of one run:\n%w", errors.Join(errs...))
}
