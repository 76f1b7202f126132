package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/mqblast/mqblast/result"
)

// checkMergeInputs refuses results that are not the distinct shards of one run: the same
// file given twice, and every problem result.CheckShards finds, each naming its files.
func checkMergeInputs(paths []string, rs []*result.Result) error {
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
		return usageError(fmt.Errorf("cannot merge: %w", errors.Join(errs...)))
	}
	err := result.CheckShards(rs)
	if err == nil {
		return nil
	}
	var shardErrs []*result.ShardError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var se *result.ShardError
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
	return usageError(fmt.Errorf("cannot merge: not the distinct shards of one run:\n%w", errors.Join(errs...)))
}
