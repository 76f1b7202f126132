package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

	// A client_id that cannot give unique ids is refused in one line naming the field.
	for bad, why := range map[string]string{
		"dev":                          "has no $clientindex: every client would have the same id",
		"$clientid-$clientindex":       "holds $clientid, the id it makes",
		"d-$clientindex-$clientindex":  "holds $clientindex twice",
		"d-$clientindex%4":             "a modulo, which gives clients the same id",
		"d-$clientindex:0":             "pads $clientindex to 0 digits (want :W with W from 1 to 18)",
		"d-$clientindex:99-x":          "pads $clientindex to 19 digits",
		"d-$clientname-$clientindex":   `unknown placeholder "$clientname"`,
		"$groupindex-$clientindex:3-x": "",
	} {
		b, err := Parse("identity.json", fmt.Appendf(nil, identityFile, fmt.Sprintf(`, "client_id": %q`, bad)))
		if err != nil {
			t.Fatal(err)
		}
		err = b.Validate()
		if why == "" {
			if err != nil {
				t.Errorf("client_id %q: %v", bad, err)
			}
			continue
		}
		if want := "identity.json: groups[1].client_id: " + show(bad) + " "; err == nil || !strings.HasPrefix(err.Error(), want) ||
			!strings.Contains(err.Error(), why) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("client_id %q: %v, want one line %q...%q", bad, err, want, why)
		}
	}
}

// TestClientIDAnywhere: $clientindex may stand anywhere in a client_id, zero-padded with
// :W; every id of a client is the same rendering of it: the one it dials with (Group.ID,
// numbered from another start too), its topics' and filters' $clientid (a publisher's
// receivers found through them), a username template, a credentials file's client_id
// column, and a shard's clients.
func TestClientIDAnywhere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tmpl string
		gi   int
		ids  map[int]string // index: id
		not  []string       // no id of the form
	}{
		{"dev-$clientindex-eu", 0, map[int]string{0: "dev-0-eu", 7: "dev-7-eu", 123: "dev-123-eu"}, []string{"dev-07-eu", "dev-7", "dev-7-eu-eu", "dev--eu", "dev-x-eu"}},
		{"site$groupindex/$clientindex/gw", 3, map[int]string{0: "site3/0/gw", 42: "site3/42/gw"}, []string{"site3/042/gw", "site0/42/gw"}},
		{"d$clientindex:4", 0, map[int]string{0: "d0000", 7: "d0007", 1234: "d1234", 12345: "d12345"}, []string{"d7", "d00007", "d012345"}},
		{"$clientindex:3.x$groupindex", 1, map[int]string{5: "005.x1", 999: "999.x1", 1000: "1000.x1"}, []string{"5.x1", "0005.x1"}},
		{"n-$clientindex1", 0, map[int]string{1: "n-11", 11: "n-111"}, []string{"n-1", "n-011"}},
	} {
		f, err := idFormOf(c.tmpl, c.gi)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		g := &Group{IDPrefix: f.prefix, IDSuffix: f.suffix, IDPad: f.pad}
		for j, want := range c.ids {
			if got := g.ID(j); got != want {
				t.Errorf("%s: client %d has id %q, want %q", c.tmpl, j, got, want)
			}
			if k, ok := f.index(want); !ok || k != j {
				t.Errorf("%s: index(%q) = %d, %v; want %d", c.tmpl, want, k, ok, j)
			}
		}
		for _, s := range c.not {
			if k, ok := f.index(s); ok {
				t.Errorf("%s: index(%q) = %d, want no client", c.tmpl, s, k)
			}
		}
	}

	creds := writeCreds(t, "client_id,password", "dev-1-eu,p1", "dev-0-eu,p0", "dev-2-eu,p2", "dev-0,x", "dev-00-eu,y")
	s, err := Parse("anywhere.json", []byte(`{
  "name": "anywhere",
  "groups": [
    {"name": "dev", "behaviours": ["publish"], "client_count": 3, "client_id": "dev-$clientindex-eu", "qos": 1,
     "topics": "devices/$clientid/telemetry", "credentials_file": `+strconv.Quote(creds)+`,
     "server": {"username": "u-$clientid"}},
    {"name": "app", "behaviours": ["subscribe"], "client_count": 3, "client_id": "dev-$clientindex:2-app",
     "filters": "devices/dev-$clientindex-eu/#"},
    {"name": "own", "behaviours": ["subscribe"], "client_count": 3, "client_id": "dev-$clientindex-eu-own",
     "filters": "devices/$clientid/#"}
  ],
  "parameters": {"duration_sec": 1}
}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range p.Len() {
		c := p.Client(i)
		got = append(got, fmt.Sprintf("%s %s %s:%s %v %d", c.ID, c.Topic, c.Username, c.Password, c.Filters, c.Receivers))
		if id := c.Group.ID(c.Index); id != c.ID {
			t.Errorf("client %d: Group.ID %q, Client.ID %q", i, id, c.ID)
		}
		if id, want := c.Group.ID(100+c.Index), strings.Replace(c.ID, "-"+fmt.Sprint(c.Index)+"-", "-"+fmt.Sprint(100+c.Index)+"-", 1); c.GroupName == "dev" && id != want {
			t.Errorf("client %d numbered from 100: %q, want %q", i, id, want)
		}
	}
	want := []string{
		"dev-0-eu devices/dev-0-eu/telemetry u-dev-0-eu:p0 [] 1",
		"dev-1-eu devices/dev-1-eu/telemetry u-dev-1-eu:p1 [] 1",
		"dev-2-eu devices/dev-2-eu/telemetry u-dev-2-eu:p2 [] 1",
		"dev-00-app  : [devices/dev-0-eu/#] 0",
		"dev-01-app  : [devices/dev-1-eu/#] 0",
		"dev-02-app  : [devices/dev-2-eu/#] 0",
		"dev-0-eu-own  : [devices/dev-0-eu-own/#] 0",
		"dev-1-eu-own  : [devices/dev-1-eu-own/#] 0",
		"dev-2-eu-own  : [devices/dev-2-eu-own/#] 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("clients:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each publisher's message reaches the one app client of its index ($clientindex in
	// the filter), none of the own group ("dev-K-eu-own" is not "dev-K-eu").
	whole := map[string]bool{}
	for i := range p.Len() {
		whole[p.Client(i).ID] = true
	}
	for k := range 2 {
		q := p.Shard(k, 2)
		for i := range q.Len() {
			if c := q.Client(i); !whole[c.ID] {
				t.Errorf("shard %d of 2: client %q is not one of the whole plan's", k, c.ID)
			}
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

// TestClientIDsUnique: two groups whose client_id templates may give one id alike are
// refused, naming the later group's field; text before or after the index that tells
// them apart is enough.
func TestClientIDsUnique(t *testing.T) {
	t.Parallel()
	two := func(a, b string) error {
		t.Helper()
		s, err := Parse("ids.json", fmt.Appendf(nil, `{"name": "ids", "groups": [
  {"name": "a", "behaviours": ["hold"], "client_count": 200, %s},
  {"name": "b", "behaviours": ["hold"], "client_count": 200, %s}],
 "parameters": {"duration_sec": 1}}`, a, b))
		if err != nil {
			t.Fatal(err)
		}
		return s.Validate()
	}
	for _, c := range []struct {
		a, b string
		want string // "" accepted
	}{
		{`"client_id": "dev-$clientindex-eu"`, `"client_id": "dev-$clientindex-us"`, ""},
		{`"client_id": "dev-$clientindex-eu"`, `"id_prefix": "dev-"`, ""},
		{`"client_id": "dev-$clientindex-eu"`, `"client_id": "dev-$clientindex-eu-2"`, ""},
		{`"client_id": "dev-$clientindex-eu"`, `"client_id": "dev-$clientindex-eu"`,
			`ids.json: groups[1].client_id: "dev-$clientindex-eu" may give ids that groups[0] ("dev-$clientindex-eu") gives too`},
		{`"id_prefix": "dev-"`, `"client_id": "dev-$clientindex1"`, `groups[1].client_id: "dev-$clientindex1" may give ids`},         // dev-11
		{`"id_prefix": "d"`, `"client_id": "d$clientindex:3"`, `groups[1].client_id: "d$clientindex:3" may give ids`},                // d100
		{`"client_id": "x-$clientindex"`, `"client_id": "x-1$clientindex-y"`, ""},                                                    // no id of a ends in -y
		{`"client_id": "x-$clientindex-y"`, `"client_id": "x-1$clientindex-y"`, `groups[1].client_id: "x-1$clientindex-y" may give`}, // x-10-y
	} {
		err := two(c.a, c.b)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s and %s: %v, want them accepted", c.a, c.b, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0):
			t.Errorf("%s and %s: %v, want one line with %q", c.a, c.b, err, c.want)
		}
	}

	// A plain file's publishers and subscribers with the scenario's template.
	q, _ := Builtin("quick-p2p-100")
	if err := q.Set("client_id", "dev-$clientindex:3-x"); err != nil {
		t.Fatal(err)
	}
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), `quick-p2p-100: client_id: "dev-$clientindex:3-x" may give client ids that publishers also use`) {
		t.Errorf("one template for publishers and subscribers: %v", err)
	}
}

// TestClientCertSAN: client_cert_san is read, written back and checked: without a CA, with
// an empty name, an unknown placeholder, or "none" as the subject without it, it is
// refused in one line naming the field.
func TestClientCertSAN(t *testing.T) {
	t.Parallel()
	load := func(server string) (*Scenario, error) {
		t.Helper()
		s, err := Parse("san.json", fmt.Appendf(nil, `{"name": "san", "server": %s, "groups": [
  {"name": "d", "behaviours": ["hold"], "client_count": 2}], "parameters": {"duration_sec": 1}}`, server))
		if err != nil {
			t.Fatal(err)
		}
		return s, s.Validate()
	}
	s, err := load(`{"client_ca": "ca.pem", "client_ca_key": "ca.key", "client_cert_subject": "none", "client_cert_san": "$clientid.example, urn:x:$clientindex:3"}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Server.ClientCert; c.SAN != "$clientid.example, urn:x:$clientindex:3" || c.Subject != NoCommonName {
		t.Errorf("read %+v", c)
	}
	if data, _ := s.MarshalJSON(); !strings.Contains(string(data), `"client_cert_san":"$clientid.example, urn:x:$clientindex:3"`) {
		t.Errorf("the effective scenario lacks client_cert_san: %s", data)
	}
	for server, want := range map[string]string{
		`{"client_cert_san": "$clientid.example"}`:                                                        `server.client_cert_san: "$clientid.example" without client_ca`,
		`{"client_ca": "ca.pem", "client_ca_key": "ca.key", "client_cert_san": "a.example,,b"}`:           `server.client_cert_san: "a.example,,b" has an empty name between commas`,
		`{"client_ca": "ca.pem", "client_ca_key": "ca.key", "client_cert_san": "$clientname.example"}`:    `server.client_cert_san: "$clientname.example": unknown placeholder "$clientname"`,
		`{"client_ca": "ca.pem", "client_ca_key": "ca.key", "client_cert_subject": "none"}`:               `server.client_cert_subject: "none" (no common name) without client_cert_san`,
		`{"client_ca": "ca.pem", "client_ca_key": "ca.key", "client_cert_san": "$clientindex%4.example"}`: `server.client_cert_san: "$clientindex%4.example" has $clientindex%4, a modulo`,
	} {
		if _, err := load(server); err == nil || !strings.HasPrefix(err.Error(), "san.json: "+want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line %q", server, err, want)
		}
	}
}
