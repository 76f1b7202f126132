package study

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mqblast/mqblast/internal/atomicfile"
)

// IndexSchema is the version of study.json.
const IndexSchema = "mqblast.study/v1"

// Index is study.json: the campaign, every cell with its parameters, status, result file
// and the command that reproduces it. It is rewritten after every cell, so an interrupted
// study leaves what it did, and a resumed one (the same --out) skips the cells done.
type Index struct {
	Schema      string          `json:"schema"`
	ToolVersion string          `json:"tool_version"`
	Name        string          `json:"name"`
	Campaign    json.RawMessage `json:"campaign"`      // the campaign as decoded, defaults filled in
	CampaignSum string          `json:"campaign_hash"` // sha256 of Campaign: resume refuses another campaign
	Order       string          `json:"order"`
	Seed        int64           `json:"seed,omitempty"` // the shuffle's seed, to redo the order
	StartedAt   time.Time       `json:"started_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Finished    bool            `json:"finished"`
	Interrupted bool            `json:"interrupted,omitempty"`
	HostCheck   json.RawMessage `json:"host_check,omitempty"` // tuning's findings, checked once for the largest cell
	Brokers     []BrokerRecord  `json:"brokers"`
	Cells       []*CellRecord   `json:"cells"` // in campaign order; Seq is the run order
	Notes       []string        `json:"notes,omitempty"`
}

// BrokerRecord is how the study reached one broker.
type BrokerRecord struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Address string `json:"address"`
	Start   string `json:"start,omitempty"` // the start command, placeholders expanded
	Restart string `json:"restart_policy"`  // what happens between cells
}

// Cell statuses.
const (
	StatusPending     = "pending"
	StatusOK          = "ok"
	StatusThreshold   = "threshold" // ran; a declared threshold failed (mqblast run exit 5)
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// CellRecord is one cell of the study: one broker, one scenario with one value of each
// sweep, one network profile, one repetition.
type CellRecord struct {
	ID         string    `json:"id"`  // c0001...: stable for a campaign, names the files
	Seq        int       `json:"seq"` // position in the run order, from 1
	Broker     string    `json:"broker"`
	Scenario   string    `json:"scenario"` // the scenario's label
	Params     []KV      `json:"params"`   // the sweep values of the cell
	Profile    string    `json:"profile"`
	Repetition int       `json:"repetition"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	ExitCode   int       `json:"exit_code,omitempty"`
	Result     string    `json:"result,omitempty"` // the result document, relative to the study directory
	Log        string    `json:"log,omitempty"`    // the run's stderr
	Spec       string    `json:"spec,omitempty"`   // the Spec of the cell's run, relative to the study directory
	Command    []string  `json:"command"`          // the argv that ran the cell (mqblast run with the Spec)
	Reproduce  string    `json:"reproduce"`        // the same as one shell line, with the broker's start command
	StartedAt  time.Time `json:"started_at,omitzero"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	WallS      float64   `json:"wall_s,omitempty"`
	Network    *NetStats `json:"network,omitempty"` // the packet emulator during the cell

	specJSON []byte // the Spec a dry run would write to Spec
}

// Done reports whether a resumed study skips the cell.
func (c *CellRecord) Done(retryFailed bool) bool {
	switch c.Status {
	case StatusOK, StatusThreshold:
		return true
	case StatusFailed:
		return !retryFailed
	}
	return false
}

// Label names the cell for people: broker, scenario, sweep values, profile, repetition.
func (c *CellRecord) Label() string {
	return fmt.Sprintf("%s %s %s %s rep %d", c.Broker, c.Scenario, comboName(c.Params), c.Profile, c.Repetition)
}

// ReadIndex reads DIR/study.json.
func ReadIndex(dir string) (*Index, error) {
	b, err := os.ReadFile(filepath.Join(dir, "study.json"))
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "study.json"), err)
	}
	if ix.Schema != IndexSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", filepath.Join(dir, "study.json"), ix.Schema, IndexSchema)
	}
	return &ix, nil
}

// write replaces DIR/study.json through a temporary file and a rename.
func (ix *Index) write(dir string) error {
	ix.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "study.json"), append(b, '\n'))
}

// writeAtomic writes the file at path whole or not at all.
func writeAtomic(path string, data []byte) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// MarshalJSON writes the campaign with its time spans in seconds, defaults filled in, and
// the marker for a password.
func (c *Campaign) MarshalJSON() ([]byte, error) {
	type plain Campaign
	return json.Marshal(struct {
		*plain
		DurationS float64 `json:"duration_sec,omitempty"`
		WarmupS   float64 `json:"warmup_sec,omitempty"`
		PauseS    float64 `json:"pause_sec,omitempty"`
	}{(*plain)(c.redacted()), c.Duration.Seconds(), c.Warmup.Seconds(), c.Pause.Seconds()})
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
