package run

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// Where a run's identity came from (result.RunInfo.From).
const (
	runIDGiven     = "run-id"    // --run-id
	runIDStartAt   = "start-at"  // derived from --start-at's instant
	runIDGenerated = "generated" // drawn at random
)

// maxRunID bounds a --run-id's length: it is recorded in every result and handed to the
// worker processes on their command line.
const maxRunID = spec.MaxRunID

// resolveRunID returns a run's identity: given (--run-id) when it is not empty; else one
// derived from start's instant (--start-at), so that shards started at one instant agree;
// else one drawn at random. The tag every measured header carries is derived from the ID
// (runIdentity).
func resolveRunID(given string, start *startAt) (*result.RunInfo, error) {
	if given = strings.TrimSpace(given); given != "" {
		if len(given) > maxRunID || strings.IndexFunc(given, unicode.IsControl) >= 0 {
			return nil, usage(spec.Errorf("run_id", "{run_id} %.40q: want printable text of at most %d bytes "+
				"(e.g. a Kubernetes Job's uid, or a date and a name: 2026-01-02-fanout)", given, maxRunID))
		}
		return runIdentity(given, runIDGiven), nil
	}
	if start != nil {
		return runIdentity("start-at:"+start.At().UTC().Format(time.RFC3339Nano), runIDStartAt), nil
	}
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("cannot draw a run identity (give one with --run-id): %w", err) // the host's randomness failed
	}
	return runIdentity(hex.EncodeToString(b[:]), runIDGenerated), nil
}

// runIdentity is the identity id, come from where from says: its tag is id itself when id
// is four hex digits (as generated ones are), else the first 16 bits of its SHA-256.
func runIdentity(id, from string) *result.RunInfo {
	var tag uint16
	if b, err := hex.DecodeString(id); err == nil && len(b) == 2 {
		tag = binary.BigEndian.Uint16(b)
	} else {
		sum := sha256.Sum256([]byte(id))
		tag = binary.BigEndian.Uint16(sum[:2])
	}
	return &result.RunInfo{ID: id, Tag: tag, From: from}
}

// checkShardIdentity refuses a shard (--shard) whose run identity the other shards cannot
// share: one drawn at random, since neither --run-id nor --start-at was given.
func checkShardIdentity(shard string, id *result.RunInfo) error {
	if shard == "" || id == nil || id.From != runIDGenerated {
		return nil
	}
	return usage(spec.Errorf("shard", "{shard} %s: the shards of one run must carry one run identity, or each counts "+
		"the others' messages as another run's and merge refuses them: give every shard the same {run_id} "+
		"(any text, e.g. 2026-01-02-fanout) or the same {start_at}", shard))
}
