package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// ErrInterrupted is returned by Run when its context ends before every cell ran; the
// index and the report hold the cells done.
var ErrInterrupted = errors.New("study: interrupted")

// ErrDirInUse is returned by Run (errors.Is) when the study directory holds what the
// study would overwrite: a study of another campaign, or a study's files without their
// study.json. The fix is another --out.
var ErrDirInUse = errors.New("study: the directory holds another study")

// dirInUse is an ErrDirInUse with its own message.
type dirInUse struct{ msg string }

func (e *dirInUse) Error() string        { return e.msg }
func (e *dirInUse) Is(target error) bool { return target == ErrDirInUse }

// checkFresh refuses a directory without study.json that holds a study's files (cells/,
// brokers/, study.html, summary.md): a study whose index is lost, or another tool's files, which the
// study would overwrite without being able to resume.
func checkFresh(dir string) error {
	var held []string
	for _, sub := range []string{"cells", "brokers"} {
		if es, err := os.ReadDir(filepath.Join(dir, sub)); err == nil && len(es) > 0 {
			held = append(held, fmt.Sprintf("%s/ (%d entries, e.g. %s)", sub, len(es), es[0].Name()))
		}
	}
	for _, f := range []string{"study.html", "summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			held = append(held, f)
		}
	}
	if len(held) == 0 {
		return nil
	}
	return &dirInUse{fmt.Sprintf("%s holds %s but no study.json: a study cannot resume without its index, and would "+
		"overwrite those files; give a new --out, or remove the directory to start over", dir, strings.Join(held, " and "))}
}

// Options configure Run.
type Options struct {
	Dir         string    // the study directory (--out): study.json, study.html, cells/, brokers/
	Exe         string    // the mqblast binary that runs each cell (mqblast run ...)
	ToolVersion string    // for the index
	Progress    io.Writer // progress lines (cell k of n, ETA); nil: none
	RetryFailed bool      // a resumed study runs its failed cells again
	HostCheck   json.RawMessage
	// Base is the Spec every cell's starts from (e.g. its loops): a cell sets its scenario,
	// its broker, its outputs and what of the broker is watched.
	Base spec.Spec
	// Command is the argv that runs the Spec in the file at path (mqblast run with it).
	Command func(path string) []string
	// OnCellStart, when set, is called once a cell's run has started, with the pid of the
	// broker process sampled (0 when none). Tests use it to kill a broker mid-cell.
	OnCellStart func(c *CellRecord, brokerPID int)
	// Report writes study.html from the index; nil: no report.
	Report func(dir string, ix *Index) error
}

// cellPlan is one cell to run.
type cellPlan struct {
	rec    *CellRecord
	spec   *ScenarioSpec
	broker int
	combo  []KV
}

// Cells expands the campaign into its cells in campaign order (scenario, sweep values,
// profile, broker, repetition), the records of a fresh index.
func (c *Campaign) Cells() []*CellRecord {
	var out []*CellRecord
	for _, cp := range c.plans() {
		out = append(out, cp.rec)
	}
	return out
}

func (c *Campaign) plans() []cellPlan {
	var out []cellPlan
	n := 0
	for i := range c.Scenarios {
		sp := &c.Scenarios[i]
		for _, combo := range sp.combos() {
			for _, prof := range c.Profiles {
				for b := range c.Brokers {
					for rep := 1; rep <= c.Repetitions; rep++ {
						n++
						out = append(out, cellPlan{spec: sp, broker: b, combo: combo, rec: &CellRecord{
							ID: fmt.Sprintf("c%04d", n), Broker: c.Brokers[b].Name, Scenario: sp.Label,
							Params: combo, Profile: prof, Repetition: rep, Status: StatusPending}})
					}
				}
			}
		}
	}
	return out
}

// Plans returns one plan per distinct cell scenario (brokers and repetitions aside), on a
// placeholder loopback broker: what the host check of the study is made for.
func (c *Campaign) Plans() ([]*scenario.Plan, error) {
	var out []*scenario.Plan
	for i := range c.Scenarios {
		sp := &c.Scenarios[i]
		for _, combo := range sp.combos() {
			s, err := c.cellScenario(sp, combo, "127.0.0.1:1883")
			if err != nil {
				return nil, err
			}
			p, err := scenario.NewPlan(s)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// runOrder spreads drift: repetition 1 of every cell, then repetition 2, ...; within a
// round, campaign order with the brokers alternating, or a shuffle drawn from seed.
func runOrder(plans []cellPlan, reps int, shuffled bool, seed int64) []cellPlan {
	var out []cellPlan
	for rep := 1; rep <= reps; rep++ {
		var round []cellPlan
		for _, p := range plans {
			if p.rec.Repetition == rep {
				round = append(round, p)
			}
		}
		if shuffled {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(rep)))
			r.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		out = append(out, round...)
	}
	for i := range out {
		out[i].rec.Seq = i + 1
	}
	return out
}

// Run runs the campaign's cells into opt.Dir and returns the index. A cell that fails
// (its run errs, its broker dies, its profile cannot be applied) is recorded and the study
// goes on. When opt.Dir holds a study of the same campaign, the cells it did are skipped
// and their results kept; a study of another campaign, or a study's files without their
// study.json, is refused (ErrDirInUse) before anything is written. When ctx ends, the running cell is interrupted (its partial
// result kept, the cell left to redo) and Run returns ErrInterrupted after writing the
// index and the report.
func Run(ctx context.Context, c *Campaign, opt Options) (*Index, error) {
	if err := CheckInstalled(c); err != nil {
		return nil, err
	}
	prior, priorErr := ReadIndex(opt.Dir)
	if errors.Is(priorErr, os.ErrNotExist) {
		if err := checkFresh(opt.Dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(opt.Dir, "cells"), 0o755); err != nil {
		return nil, fmt.Errorf("study directory: %w", err)
	}
	campaignJSON, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	ix := &Index{Schema: IndexSchema, ToolVersion: opt.ToolVersion, Name: c.Name, Campaign: campaignJSON,
		CampaignSum: hashOf(campaignJSON), Order: c.Order, Seed: c.Seed, StartedAt: time.Now().UTC(), HostCheck: opt.HostCheck}
	plans := c.plans()
	switch err := priorErr; {
	case err == nil:
		if prior.CampaignSum != ix.CampaignSum {
			return nil, &dirInUse{fmt.Sprintf("%s holds a study of another campaign (%q, or this one changed): "+
				"give a new --out, or remove the directory to start over", opt.Dir, prior.Name)}
		}
		ix.StartedAt, ix.Seed, ix.Notes = prior.StartedAt, prior.Seed, prior.Notes
		if len(ix.HostCheck) == 0 {
			ix.HostCheck = prior.HostCheck
		}
		byID := map[string]*CellRecord{}
		for _, r := range prior.Cells {
			byID[r.ID] = r
		}
		for i := range plans {
			if r, ok := byID[plans[i].rec.ID]; ok && r.Done(opt.RetryFailed) {
				*plans[i].rec = *r
			}
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("cannot resume: %w", err)
	}
	if c.Order == "shuffled" && ix.Seed == 0 {
		ix.Seed = time.Now().UnixNano()
	}
	order := runOrder(plans, c.Repetitions, c.Order == "shuffled", ix.Seed)
	for _, p := range plans {
		ix.Cells = append(ix.Cells, p.rec)
	}
	todo := 0
	for _, p := range order {
		if !p.rec.Done(opt.RetryFailed) {
			todo++
		}
	}
	nw := &network{}
	if todo > 0 {
		var note string
		if nw, note, err = startNetwork(c); err != nil {
			return nil, err
		}
		defer nw.close()
		if note != "" {
			ix.Notes = appendNote(ix.Notes, note)
		}
	}
	procs := make([]*brokerProc, len(c.Brokers))
	for i, b := range c.Brokers {
		p, err := newBrokerProc(b, opt.Dir, opt.Exe, nw)
		if err != nil {
			return nil, err
		}
		procs[i] = p
		policy := "none: an external broker without a restart command is not restarted"
		switch {
		case c.Restart == "never":
			policy = "never: started once"
		case p.starts():
			policy = "started before each cell, stopped after it"
		case b.Restart != "":
			policy = "restart command before each cell"
		}
		ix.Brokers = append(ix.Brokers, BrokerRecord{Name: b.Name, Type: b.Type, Address: p.addr, Start: p.startCommand(), Restart: policy})
	}
	defer func() {
		for _, p := range procs {
			_ = p.stop()
		}
	}()
	r := &runner{c: c, opt: opt, ix: ix, procs: procs, net: nw}
	if skipped := len(order) - todo; skipped > 0 {
		r.progress("study %s: %d cells, %d done before (kept), %d to run", c.Name, len(order), skipped, todo)
	} else {
		r.progress("study %s: %d cells (%d repetitions, %s order) into %s", c.Name, len(order), c.Repetitions, c.Order, opt.Dir)
	}
	if err := r.save(); err != nil {
		return nil, err
	}
	var took time.Duration
	ran := 0
	for _, p := range order {
		if p.rec.Done(opt.RetryFailed) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if ran > 0 && c.Pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(c.Pause):
			}
			if ctx.Err() != nil {
				break
			}
		}
		t0 := time.Now()
		r.runCell(ctx, p)
		ran++
		took += time.Since(t0)
		eta := (took/time.Duration(ran) + c.Pause) * time.Duration(todo-ran)
		r.progress("study: cell %d of %d (%d/%d this run) %s: %s in %.1fs%s; ETA %v",
			p.rec.Seq, len(order), ran, todo, p.rec.Label(), p.rec.Status, p.rec.WallS, errSuffix(p.rec), eta.Round(time.Second))
		if err := r.save(); err != nil {
			return ix, err
		}
	}
	ix.Interrupted = ctx.Err() != nil
	ix.Finished = !ix.Interrupted
	for _, rec := range ix.Cells {
		if !rec.Done(false) {
			ix.Finished = false
		}
	}
	if err := r.save(); err != nil {
		return ix, err
	}
	if ix.Interrupted {
		return ix, ErrInterrupted
	}
	return ix, nil
}

func errSuffix(rec *CellRecord) string {
	if rec.Error == "" {
		return ""
	}
	return " (" + rec.Error + ")"
}

type runner struct {
	c     *Campaign
	opt   Options
	ix    *Index
	procs []*brokerProc
	net   *network
}

// progress writes one progress line; its string arguments (names from the campaign file,
// a cell's error with its run's output) are escaped, so each stays on its line.
func (r *runner) progress(format string, args ...any) {
	if r.opt.Progress == nil {
		return
	}
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = termtext.Line(s)
		}
	}
	fmt.Fprintf(r.opt.Progress, format+"\n", args...)
}

// save writes the index and the report.
func (r *runner) save() error {
	if err := r.ix.write(r.opt.Dir); err != nil {
		return err
	}
	if r.opt.Report != nil {
		if err := r.opt.Report(r.opt.Dir, r.ix); err != nil {
			return fmt.Errorf("study report: %w", err)
		}
	}
	return nil
}

// runCell runs one cell and records its outcome in p.rec.
func (r *runner) runCell(ctx context.Context, p cellPlan) {
	rec := p.rec
	bp := r.procs[p.broker]
	rec.StartedAt, rec.EndedAt, rec.Error, rec.ExitCode, rec.Status = time.Now().UTC(), time.Time{}, "", 0, StatusFailed
	ended := func() {
		rec.EndedAt = time.Now().UTC()
		rec.WallS = rec.EndedAt.Sub(rec.StartedAt).Seconds()
	}
	defer func() {
		if rec.EndedAt.IsZero() {
			ended()
		}
	}()
	rec.Result, rec.Network = "", nil
	result := resultPath(rec)
	rec.Log = filepath.Join("cells", rec.ID+".log")
	rec.Spec = ""
	argv := r.command(p)
	rec.Command = argv
	rec.Reproduce = r.reproduce(bp, argv)
	if err := r.net.apply(rec.Profile, bp); err != nil {
		rec.Error = err.Error()
		return
	}
	if err := r.prepareBroker(ctx, bp); err != nil {
		rec.Error = err.Error()
		if ctx.Err() != nil {
			rec.Status = StatusInterrupted
		}
		return
	}
	if r.c.Restart != "never" && bp.starts() {
		defer func() { _ = bp.stop() }()
	}
	_ = os.Remove(filepath.Join(r.opt.Dir, result))
	pid := bp.pid(ctx)
	if err := r.writeSpec(p, bp, pid); err != nil {
		rec.Error = err.Error()
		return
	}
	rec.Spec = specPath(rec)
	if r.net.inLink(bp) {
		argv = r.net.wrapClient(argv)
		rec.Command = argv
		rec.Reproduce = r.reproduce(bp, argv)
	}
	before := r.net.stats()
	code, how, tail, err := r.exec(ctx, p, argv, pid)
	ended() // the broker's start is in the cell's time, its stop is not
	rec.ExitCode = code
	if r.net.inLink(bp) {
		rec.Network = netDelta(rec.Profile, before, r.net.stats())
	}
	alive, why := bp.running()
	_, statErr := os.Stat(filepath.Join(r.opt.Dir, result))
	switch {
	case ctx.Err() != nil:
		rec.Status, rec.Error = StatusInterrupted, "interrupted: the partial result is kept; the cell runs again on resume"
	case !alive:
		rec.Error = fmt.Sprintf("the broker %s went away during the cell (%s)", bp.b.Name, why)
		bp.cmd = nil
	case err != nil:
		rec.Error = fmt.Sprintf("mqblast run did not run: %v", err)
	case code == 5:
		rec.Status, rec.Error = StatusThreshold, "a threshold failed: "+tail
	case code != 0:
		rec.Error = fmt.Sprintf("mqblast run failed (%s): %s", how, tail)
	case statErr != nil:
		rec.Error = "mqblast run wrote no result"
	default:
		rec.Status = StatusOK
	}
	if statErr == nil {
		rec.Result = result
	}
}

// resultPath is where a cell's result document goes, relative to the study directory.
func resultPath(rec *CellRecord) string { return filepath.Join("cells", rec.ID+".json") }

// prepareBroker gives the cell a fresh broker when the campaign and the broker allow.
func (r *runner) prepareBroker(ctx context.Context, bp *brokerProc) error {
	switch {
	case bp.starts() && r.c.Restart == "never":
		if alive, _ := bp.running(); bp.cmd != nil && alive {
			return nil
		}
		return bp.start(ctx)
	case bp.starts():
		_ = bp.stop()
		return bp.start(ctx)
	case bp.b.Restart != "" && r.c.Restart != "never":
		return bp.restart(ctx)
	}
	return nil
}

// specPath is where a cell's Spec goes, relative to the study directory.
func specPath(rec *CellRecord) string { return filepath.Join("cells", rec.ID+".spec.json") }

// command is the argv of a cell's run: mqblast run with its Spec's file.
func (r *runner) command(p cellPlan) []string {
	return r.opt.Command(filepath.Join(r.opt.Dir, specPath(p.rec)))
}

// cellSpec is the Spec of a cell's run against bp, whose process is pid (0: none
// sampled): the study's base, the cell's scenario with its sets (a password the marker: the
// cell takes it from its environment), the broker, the result's file, the broker watched.
func (r *runner) cellSpec(p cellPlan, bp *brokerProc, pid int) *spec.Spec {
	sp := r.opt.Base
	sp.Scenario = spec.Scenario{Name: p.spec.Scenario}
	if p.spec.path != "" {
		sp.Scenario.Name = p.spec.path
	}
	for _, kv := range r.c.cellSets(p.spec, p.combo) {
		v := kv.Value
		if scenario.SecretPath(kv.Path) {
			v = scenario.RedactedPassword
		}
		sp.Scenario.Set = append(sp.Scenario.Set, kv.Path+"="+v)
	}
	sp.Brokers = []string{bp.addr}
	sp.NoCheck = true
	sp.Outputs.Format, sp.Outputs.Out = "json", filepath.Join(r.opt.Dir, resultPath(p.rec))
	sp.Watch.BrokerCgroup = bp.b.Cgroup
	sp.Watch.BrokerMetrics = bp.b.Metrics
	sp.Watch.Series = bp.b.Metric
	sp.Watch.BrokerPID = pid
	return &sp
}

// writeSpec writes the Spec of a cell's run (cellSpec) to its file.
func (r *runner) writeSpec(p cellPlan, bp *brokerProc, pid int) error {
	path := filepath.Join(r.opt.Dir, specPath(p.rec))
	if err := os.WriteFile(path, r.cellSpec(p, bp, pid).JSON(), 0o644); err != nil {
		return fmt.Errorf("cannot write the cell's spec: %w", err)
	}
	return nil
}

// reproduce is one shell line that redoes the cell: the broker's start command (when the
// study starts it) and the run.
func (r *runner) reproduce(bp *brokerProc, argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	line := strings.Join(q, " ")
	if bp.starts() {
		start := bp.startCommand()
		if r.net.inLink(bp) {
			start = strings.Join(r.net.wrapBroker([]string{"/bin/sh", "-c", shellQuote(start)}), " ")
		}
		line = fmt.Sprintf("( %s ) & sleep 1; %s; kill %%1", start, line)
	}
	return line
}

// exec runs a cell's mqblast run to its end, its stderr into the cell's log. It returns
// the exit code (-1: killed by a signal), how the process ended (exitText) and the last
// lines of stderr.
func (r *runner) exec(ctx context.Context, p cellPlan, argv []string, pid int) (int, string, string, error) {
	log, err := os.Create(filepath.Join(r.opt.Dir, p.rec.Log))
	if err != nil {
		return 0, "", "", err
	}
	defer log.Close()
	fmt.Fprintf(log, "# %s\n", p.rec.Reproduce)
	var tail bytes.Buffer
	c := exec.Command(argv[0], argv[1:]...)
	if pw, groups := r.c.cellPassword(p.spec, p.combo); pw != "" || len(groups) > 0 {
		c.Env = os.Environ()
		if pw != "" {
			c.Env = secret.Env(c.Env, pw) // its argv has the marker
		}
		if len(groups) > 0 {
			c.Env = secret.EnvGroups(c.Env, groups)
		}
	}
	c.Stdout = io.Discard
	c.Stderr = io.MultiWriter(log, &tail)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Tied: the cell gets SIGINT and its pipe's EOF when the study dies.
	release, err := child.StartTied(c, syscall.SIGINT)
	if err != nil {
		return 0, "", "", err
	}
	if r.opt.OnCellStart != nil {
		r.opt.OnCellStart(p.rec, pid)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait(); release() }()
	limit := r.cellTimeout(p)
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		// Like Ctrl-C on a run: it drains, disconnects and writes its partial result.
		_ = c.Process.Signal(os.Interrupt)
		select {
		case werr = <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			werr = <-done
		}
	case <-time.After(limit):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		return -1, "", "", fmt.Errorf("the cell ran past %v and was killed", limit)
	}
	code, how := 0, ""
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code, how, werr = ee.ExitCode(), exitText(ee), nil
	}
	return code, how, lastLines(tail.String(), 2), werr
}

// cellTimeout bounds a cell's run: its scenario's time (connect, publish, drain), twice,
// and a minute.
func (r *runner) cellTimeout(p cellPlan) time.Duration {
	s, err := r.c.cellScenario(p.spec, p.combo, "127.0.0.1:1883")
	if err != nil {
		return time.Hour
	}
	pr := s.Parameters
	d := pr.Duration + pr.Drain
	if pr.ConnectionRate > 0 {
		if plan, err := scenario.NewPlan(s); err == nil {
			d += time.Duration(float64(plan.Len()) / pr.ConnectionRate * float64(time.Second))
		}
	}
	return 2*d + time.Minute
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// DryRun returns the cells in run order with the command each would run (the broker-pid
// aside), running nothing. The ports of brokers the study starts are picked as Run would.
func DryRun(c *Campaign, opt Options) ([]*CellRecord, error) {
	seed := c.Seed
	if c.Order == "shuffled" && seed == 0 {
		seed = 1
	}
	order := runOrder(c.plans(), c.Repetitions, c.Order == "shuffled", seed)
	r := &runner{c: c, opt: opt, net: &network{}}
	for _, b := range c.Brokers {
		p, err := newBrokerProc(b, opt.Dir, opt.Exe, r.net)
		if err != nil {
			return nil, err
		}
		r.procs = append(r.procs, p)
	}
	out := make([]*CellRecord, 0, len(order))
	for _, p := range order {
		p.rec.Spec = specPath(p.rec)
		p.rec.specJSON = r.cellSpec(p, r.procs[p.broker], 0).JSON()
		p.rec.Command = r.command(p)
		p.rec.Reproduce = r.reproduce(r.procs[p.broker], p.rec.Command)
		out = append(out, p.rec)
	}
	return out, nil
}

// appendNote adds note, replacing an earlier note on the same subject (its first word).
func appendNote(notes []string, note string) []string {
	subject, _, _ := strings.Cut(note, ":")
	out := notes[:0:0]
	for _, n := range notes {
		if s, _, _ := strings.Cut(n, ":"); s != subject {
			out = append(out, n)
		}
	}
	return append(out, note)
}
