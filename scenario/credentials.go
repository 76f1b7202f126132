package scenario

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The columns a credentials file's header may name.
const (
	colClientID = iota
	colClientIndex
	colUsername
	colPassword
	numCredCols
)

var credColNames = [numCredCols]string{"client_id", "client_index", "username", "password"}

// credsFile is a credentials file read once: a CSV file whose header row names its columns
// among client_id, client_index, username and password, one row per client. Its cells are
// kept in one string (cells index it), so that a million rows cost the file's size and four
// bytes a cell, not a million strings. A password never leaves it but through creds: no
// error or message shows a cell of the password column.
type credsFile struct {
	name  string
	col   [numCredCols]int // each column's place in a row, -1 if the header does not name it
	ncol  int
	data  string
	cells []uint32 // start of cell k of row r at cells[r*ncol+k]; one more at the end
	rows  int
}

// cell returns column c (a col* constant) of row r; "" if the file has no such column.
func (f *credsFile) cell(r, c int) string {
	k := f.col[c]
	if k < 0 {
		return ""
	}
	i := r*f.ncol + k
	return f.data[f.cells[i]:f.cells[i+1]]
}

// readCreds reads and checks the credentials file name. Its errors name the file and,
// for a header's problem, the column; never a cell's value of the password column.
func readCreds(name string) (*credsFile, error) {
	fh, err := os.Open(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer fh.Close()
	size := 0
	if st, err := fh.Stat(); err == nil && st.Size() < 1<<32 {
		size = int(st.Size())
	}
	return parseCreds(name, fh, size)
}

// parseCreds reads a credentials file from r (see readCreds), of about size bytes.
func parseCreds(name string, r io.Reader, size int) (*credsFile, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	switch {
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s: empty; want a header row naming its columns among %s", name, strings.Join(credColNames[:], ", "))
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, csvErr(err))
	}
	f := &credsFile{name: name, ncol: len(head)}
	for c := range f.col {
		f.col[c] = -1
	}
	for k, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		c := -1
		for i, n := range credColNames {
			if h == n {
				c = i
			}
		}
		switch {
		case c < 0:
			return nil, fmt.Errorf("%s: column %d of the header is %q, not a column mqblast knows (want %s)%s",
				name, k+1, h, strings.Join(credColNames[:], ", "), suggest(h, credColNames[:]))
		case f.col[c] >= 0:
			return nil, fmt.Errorf("%s: the header names column %q twice", name, h)
		}
		f.col[c] = k
	}
	if f.col[colUsername] < 0 && f.col[colPassword] < 0 {
		return nil, fmt.Errorf("%s: the header names no username or password column (want %s)", name, strings.Join(credColNames[:], ", "))
	}
	var data strings.Builder
	data.Grow(size) // the cells are the file but its commas, quotes and line ends
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, csvErr(err))
		}
		if f.rows >= maxClients {
			return nil, fmt.Errorf("%s: more than %d rows", name, maxClients)
		}
		for _, v := range rec {
			f.cells = append(f.cells, uint32(data.Len()))
			data.WriteString(v)
			if data.Len() > 1<<32-1 {
				return nil, fmt.Errorf("%s: larger than 4 GiB", name)
			}
		}
		f.rows++
	}
	f.cells = append(f.cells, uint32(data.Len()))
	f.data = data.String()
	return f, nil
}

// csvErr is a CSV reader's error without the text it read (a password may be there).
func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fmt.Errorf("line %d has a column more or less than the header (a missing column?)", pe.Line)
		}
		return fmt.Errorf("line %d, column %d: %w", pe.Line, pe.Column, pe.Err)
	}
	return err
}

// credsBind is a credentials file bound to one group: the row of each of its clients.
// rowOf is nil when the file has neither client_id nor client_index: client j takes row j.
type credsBind struct {
	f     *credsFile
	rowOf []int32 // by client index: four bytes a client
}

// row returns the file's row of client j.
func (b *credsBind) row(j int) int {
	if b.rowOf == nil {
		return j
	}
	return int(b.rowOf[j])
}

// bind matches the file's rows to a group's n clients, whose ids ids makes: by client
// id where the file has that column, else by client_index, else in order. A row whose id is not one of the group's belongs to another group; every client
// of the group needs a row, and one row only.
func (f *credsFile) bind(group string, ids idForm, n int) (*credsBind, error) {
	b := &credsBind{f: f}
	if f.col[colClientID] < 0 && f.col[colClientIndex] < 0 {
		if f.rows < n {
			return nil, fmt.Errorf("%s has %d rows, fewer than the %d clients of %s", f.name, f.rows, n, group)
		}
		return b, nil
	}
	byID := f.col[colClientID] >= 0
	b.rowOf = make([]int32, n)
	for j := range b.rowOf {
		b.rowOf[j] = -1
	}
	found := 0
	for r := range f.rows {
		var j int
		if byID {
			id := f.cell(r, colClientID)
			k, ok := ids.index(id)
			if !ok || k >= n {
				continue // another group's
			}
			j = k
		} else {
			v := f.cell(r, colClientIndex)
			k, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || k < 0 {
				return nil, fmt.Errorf("%s: row %d: client_index %q is not an index (want 0, 1, ...)", f.name, r+1, v)
			}
			if k >= n {
				continue // beyond this group
			}
			j = k
		}
		if b.rowOf[j] >= 0 {
			what := "client_index " + strconv.Itoa(j)
			if byID {
				what = "client id " + strconv.Quote(f.cell(r, colClientID))
			}
			return nil, fmt.Errorf("%s: rows %d and %d are both for %s", f.name, b.rowOf[j]+1, r+1, what)
		}
		b.rowOf[j] = int32(r)
		found++
	}
	if found < n {
		first := 0
		for b.rowOf[first] >= 0 {
			first++
		}
		what := "client_index " + strconv.Itoa(first)
		if byID {
			what = "client id " + strconv.Quote(string(ids.append(nil, first)))
		}
		return nil, fmt.Errorf("%s has rows for %d of the %d clients of %s (none for %s)", f.name, found, n, group, what)
	}
	return b, nil
}

// credsCache holds the credentials files a scenario and its clones read: each is read
// once, and each group's binding made once.
type credsCache struct {
	mu    sync.Mutex
	files map[string]*credsEntry
}

type credsEntry struct {
	f     *credsFile
	err   error
	binds map[string]*credsBind
}

// credsFor returns the credentials file name, read at its first use.
func (s *Scenario) credsFor(name string) (*credsEntry, error) {
	if s.creds == nil {
		s.creds = &credsCache{}
	}
	c := s.creds
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		c.files = map[string]*credsEntry{}
	}
	e := c.files[name]
	if e == nil {
		e = &credsEntry{binds: map[string]*credsBind{}}
		e.f, e.err = readCreds(name)
		c.files[name] = e
	}
	return e, e.err
}

// groupCreds returns the binding of group g's credentials file (its own, else the
// scenario's) to its clients; nil when neither gives one. group names g in messages.
func (s *Scenario) groupCreds(group string, g *Group) (*credsBind, error) {
	name := g.CredentialsFile
	if name == "" {
		name = s.CredentialsFile
	}
	if name == "" || g.ClientCount < 1 {
		return nil, nil
	}
	e, err := s.credsFor(name)
	if err != nil {
		return nil, err
	}
	s.creds.mu.Lock()
	defer s.creds.mu.Unlock()
	key := g.IDPrefix + "\x00" + g.IDSuffix + "\x00" + strconv.Itoa(g.IDPad) + "\x00" + strconv.Itoa(g.ClientCount)
	b := e.binds[key]
	if b == nil {
		if b, err = e.f.bind(group, g.ids(), g.ClientCount); err != nil {
			return nil, err
		}
		e.binds[key] = b
	}
	return b, nil
}
