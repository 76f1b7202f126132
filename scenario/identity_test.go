package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// identityFile is a mixed scenario of two groups, the first with its own client_id template
// and server, the second with the scenario's.
const identityFile = `{
  "name": "identity",
  "client_id": "site$groupindex-dev-$clientindex",
  "server": {"username": "$clientid", "password": "pw-$groupindex-$clientindex"},
  "groups": [
    {"name": "a", "behaviours": ["hold"], "client_count": 3, "client_id": "a$groupindex-$clientindex",
     "server": {"username": "user-$clientindex", "password": "secret-$clientid"}},
    {"name": "b", "behaviours": ["hold"], "client_count": 2%s}
  ],
  "parameters": {"duration_sec": 1}
}`

// TestIdentityTemplates: client_id, server.username and server.password expand per client
// ($clientid, $clientindex, $groupindex), a group's own before the scenario's, and the
// effective scenario reads back to the same clients.
func TestIdentityTemplates(t *testing.T) {
	t.Parallel()
	s, err := Parse("identity.json", fmt.Appendf(nil, identityFile, ""))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a0-0 user-0 secret-a0-0", "a0-1 user-1 secret-a0-1", "a0-2 user-2 secret-a0-2",
		"site1-dev-0 site1-dev-0 pw-1-0", "site1-dev-1 site1-dev-1 pw-1-1",
	}
	got := func(p *Plan) []string {
		var out []string
		for i := range p.Len() {
			c := p.Client(i)
			out = append(out, c.ID+" "+c.Username+" "+c.Password)
		}
		return out
	}
	if g := got(p); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("clients:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
	data, err := p.Scenario().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "pw-") || strings.Contains(string(data), "secret-") {
		t.Errorf("the effective scenario holds a password template: %s", data)
	}
	if !strings.Contains(string(data), `"client_id":"site$groupindex-dev-$clientindex"`) {
		t.Errorf("the effective scenario lacks client_id: %s", data)
	}
	back, err := Parse("identity.json", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"server.password", "groups.a.server.password"} { // the marker in the document
		v := "pw-$groupindex-$clientindex"
		if k != "server.password" {
			v = "secret-$clientid"
		}
		if err := back.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	pb, err := NewPlan(back)
	if err != nil {
		t.Fatal(err)
	}
	if g := got(pb); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("the effective scenario read back gives clients:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}

	// A plain file: publishers are group 0, subscribers group 1.
	q, ok := Builtin("quick-p2p-100")
	if !ok {
		t.Fatal("no quick-p2p-100")
	}
	for k, v := range map[string]string{"client_id": "g$groupindex-$clientindex", "server.username": "u$clientid",
		"subscribers.client_id": "s$groupindex-$clientindex"} {
		if err := q.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	pq, err := NewPlan(q)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for i := range pq.Len() {
		c := pq.Client(i)
		ids[c.GroupName+fmt.Sprint(c.Index)] = c.ID + " " + c.Username
	}
	if ids["publishers7"] != "g0-7 ug0-7" || ids["subscribers7"] != "s1-7 us1-7" {
		t.Errorf("plain file: publisher 7 %q, subscriber 7 %q; want \"g0-7 ug0-7\", \"s1-7 us1-7\"", ids["publishers7"], ids["subscribers7"])
	}

	// A client_id that does not end in $clientindex, or holds $clientid, is refused.
	for _, bad := range []string{"dev-$clientindex-x", "dev", "$clientid-$clientindex"} {
		b, err := Parse("identity.json", fmt.Appendf(nil, identityFile, fmt.Sprintf(`, "client_id": %q`, bad)))
		if err != nil {
			t.Fatal(err)
		}
		err = b.Validate()
		if err == nil || !strings.Contains(err.Error(), "identity.json: groups[1].client_id: ") || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("client_id %q: %v, want one line naming groups[1].client_id", bad, err)
		}
	}
}

// writeCreds writes a credentials file of the given lines and returns its path.
func writeCreds(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "creds.csv")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCredentialsFile: rows are matched by client id (a row of another group's id is that
// group's), by client_index, or in order; the file's columns replace the templates, a
// column it lacks keeps them.
func TestCredentialsFile(t *testing.T) {
	t.Parallel()
	plan := func(creds string, sets ...string) []string {
		t.Helper()
		s, ok := Builtin("quick-p2p-100")
		if !ok {
			t.Fatal("no quick-p2p-100")
		}
		sets = append([]string{"publishers.client_count", "3", "subscribers.client_count", "3", "credentials_file", creds}, sets...)
		for i := 0; i < len(sets); i += 2 {
			if err := s.Set(sets[i], sets[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		p, err := NewPlan(s)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := range p.Len() {
			c := p.Client(i)
			out = append(out, c.ID+"="+c.Username+":"+c.Password)
		}
		return out
	}
	check := func(name string, got []string, want string) {
		t.Helper()
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%s:\n got %s\nwant %s", name, g, want)
		}
	}
	byID := writeCreds(t, "client_id,username,password",
		"quick-pub-2,u2,p2", "quick-sub-0,s0,q0", "quick-pub-0,u0,p0", "other-9,x,y",
		"quick-sub-1,s1,q1", "quick-pub-1,u1,p1", "quick-sub-2,s2,q2")
	check("by client id", plan(byID),
		"quick-sub-0=s0:q0 quick-sub-1=s1:q1 quick-sub-2=s2:q2 quick-pub-0=u0:p0 quick-pub-1=u1:p1 quick-pub-2=u2:p2")
	byIndex := writeCreds(t, "password,client_index", `"a,b",2`, "pz,0", "py,1")
	check("by client_index, username from the template", plan(byIndex, "server.username", "$clientid"),
		"quick-sub-0=quick-sub-0:pz quick-sub-1=quick-sub-1:py quick-sub-2=quick-sub-2:a,b "+
			"quick-pub-0=quick-pub-0:pz quick-pub-1=quick-pub-1:py quick-pub-2=quick-pub-2:a,b")
	inOrder := writeCreds(t, "username,password", "a,1", "b,2", "c,3", "d,4")
	check("in order", plan(inOrder),
		"quick-sub-0=a:1 quick-sub-1=b:2 quick-sub-2=c:3 quick-pub-0=a:1 quick-pub-1=b:2 quick-pub-2=c:3")
	check("a 3.1.1 password template with the file's usernames", plan(inOrder, "server.password", "pw-$clientindex"),
		"quick-sub-0=a:1 quick-sub-1=b:2 quick-sub-2=c:3 quick-pub-0=a:1 quick-pub-1=b:2 quick-pub-2=c:3")
	onlyPw := writeCreds(t, "password", "x", "y", "z")
	check("the file's passwords, the template's usernames", plan(onlyPw, "server.username", "u$clientindex"),
		"quick-sub-0=u0:x quick-sub-1=u1:y quick-sub-2=u2:z quick-pub-0=u0:x quick-pub-1=u1:y quick-pub-2=u2:z")
	check("a group's own file", plan(inOrder, "publishers.credentials_file", byID),
		"quick-sub-0=a:1 quick-sub-1=b:2 quick-sub-2=c:3 quick-pub-0=u0:p0 quick-pub-1=u1:p1 quick-pub-2=u2:p2")
}

// TestCredentialsFileErrors: each problem of a credentials file is one line naming the
// scenario's field and the file (and the column or the counts); none shows a password.
func TestCredentialsFileErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"unknown column", []string{"client_id,user,password", "quick-pub-0,a,hunter2"},
			`credentials_file: CREDS: column 2 of the header is "user", not a column mqblast knows (want client_id, client_index, username, password) (did you mean "username"?)`},
		{"missing column", []string{"username,password", "a,hunter2", "b"},
			`credentials_file: CREDS: line 3 has a column more or less than the header (a missing column?)`},
		{"no credentials", []string{"client_id,client_index", "x,0"},
			`credentials_file: CREDS: the header names no username or password column (want client_id, client_index, username, password)`},
		{"twice", []string{"username,password,username", "a,hunter2,b"},
			`credentials_file: CREDS: the header names column "username" twice`},
		{"empty", nil, `credentials_file: CREDS: empty; want a header row`},
		{"short", []string{"username,password", "a,hunter2", "b,hunter2"},
			`credentials_file: CREDS has 2 rows, fewer than the 3 clients of subscribers`},
		{"short by id", []string{"client_id,password", "quick-pub-0,hunter2", "quick-pub-2,hunter2", "quick-sub-0,hunter2",
			"quick-sub-1,hunter2", "quick-sub-2,hunter2"},
			`credentials_file: CREDS has rows for 2 of the 3 clients of publishers (none for client id "quick-pub-1")`},
		{"bad index", []string{"client_index,password", "x,hunter2"},
			`credentials_file: CREDS: row 1: client_index "x" is not an index (want 0, 1, ...)`},
		{"two rows", []string{"client_index,password", "0,hunter2", "1,hunter2", "0,hunter2", "2,hunter2"},
			`credentials_file: CREDS: rows 1 and 3 are both for client_index 0`},
	} {
		path := filepath.Join(t.TempDir(), "creds.csv")
		if err := os.WriteFile(path, []byte(strings.Join(c.lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		s, _ := Builtin("quick-p2p-100")
		for k, v := range map[string]string{"publishers.client_count": "3", "subscribers.client_count": "3", "credentials_file": path} {
			if err := s.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		err := s.Validate()
		want := strings.ReplaceAll(c.want, "CREDS", path)
		switch {
		case err == nil:
			t.Errorf("%s: no error, want %q", c.name, want)
		case !strings.Contains(err.Error(), want):
			t.Errorf("%s: %v\nwant a line holding %q", c.name, err, want)
		case strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error shows a password: %v", c.name, err)
		}
		if err == nil {
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		for _, l := range lines {
			if !strings.HasPrefix(l, "quick-p2p-100: credentials_file: "+path) {
				t.Errorf("%s: a line that does not name the field and the file: %q", c.name, l)
			}
		}
		if c.name != "short" && len(lines) != 1 {
			t.Errorf("%s: %d lines, want one: %v", c.name, len(lines), err)
		}
	}
	s, _ := Builtin("quick-p2p-100")
	if err := s.Set("credentials_file", "/nonexistent/creds.csv"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "credentials_file: /nonexistent/creds.csv: no such file or directory") {
		t.Errorf("a missing file: %v", err)
	}
}
