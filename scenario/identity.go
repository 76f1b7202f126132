package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// PlaceholderGroup expands to the group's index in the identity templates (client_id,
// server.username, server.password): its place in "groups", or 0 for a plain file's
// publishers and 1 for its subscribers.
const PlaceholderGroup = "$groupindex"

// identityGroups calls f for each group of s with the path of its fields and its index
// ($groupindex).
func (s *Scenario) identityGroups(f func(path string, gi int, g *Group)) {
	if s.Groups != nil {
		for i, g := range s.Groups {
			if g != nil {
				f(fmt.Sprintf("groups[%d]", i), i, &g.Group)
			}
		}
		return
	}
	if s.Publishers != nil {
		f("publishers", 0, s.Publishers)
	}
	if s.Subscribers != nil {
		f("subscribers", 1, s.Subscribers)
	}
}

// groupIndexOf returns the index ($groupindex) and the path of group g, the plan's group
// gid of s (identityGroups).
func groupIndexOf(s *Scenario, gid int, g *ClientGroup) (int, string) {
	switch {
	case s.Groups != nil:
		return gid, fmt.Sprintf("groups[%d]", gid)
	case g.Name == "publishers":
		return 0, "publishers"
	}
	return 1, "subscribers"
}

// withGroup returns template t with $groupindex replaced by gi.
func withGroup(t string, gi int) string {
	if !strings.Contains(t, PlaceholderGroup) {
		return t
	}
	return strings.ReplaceAll(t, PlaceholderGroup, strconv.Itoa(gi))
}

// idForm is how a group's client ids are made of their index j: prefix, j in decimal
// zero-padded to pad digits, suffix (the group's IDPrefix, IDPad and IDSuffix). Every id of
// a client is rendered from it: the one it dials with, topics' $clientid, the credentials
// file's client_id column, certificates.
type idForm struct {
	prefix, suffix string
	pad            int
}

// ids returns how the group's client ids are made.
func (g *Group) ids() idForm { return idForm{prefix: g.IDPrefix, suffix: g.IDSuffix, pad: g.IDPad} }

// ID returns the client id of the group's client with index j (numbered from 0; a run that
// numbers ids from --id-start passes that plus the client's index).
func (g *Group) ID(j int) string {
	f := g.ids()
	return string(f.append(make([]byte, 0, len(f.prefix)+len(f.suffix)+max(f.pad, 8)), j))
}

// append appends client j's id.
func (f idForm) append(dst []byte, j int) []byte {
	dst = append(dst, f.prefix...)
	dst = appendIndex(dst, j, min(f.pad, MaxIndexPad))
	return append(dst, f.suffix...)
}

// index returns the index of the client whose id is s, and false when s is no id of f's.
func (f idForm) index(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, f.prefix)
	if !ok {
		return 0, false
	}
	if rest, ok = strings.CutSuffix(rest, f.suffix); !ok || rest == "" || len(rest) > MaxIndexPad || !allDigits(rest) {
		return 0, false
	}
	k, err := strconv.Atoi(rest)
	if err != nil || len(rest) != max(decimalDigits(k), f.pad) {
		return 0, false // not as f writes k: a leading zero too many or too few
	}
	return k, true
}

// maxLen returns the length of the longest id of clients 0..n-1 (n ≥ 1).
func (f idForm) maxLen(n int) int {
	return len(f.prefix) + len(f.suffix) + max(decimalDigits(n-1), f.pad)
}

// overlaps reports whether an id of f may be an id of o too. An id begins with its
// prefix, then a digit, and ends with a digit, then its suffix: two forms give an id alike
// only if one prefix begins the other, followed there by a digit, and one suffix ends the
// other, preceded there by a digit.
func (f idForm) overlaps(o idForm) bool {
	a, b := f.prefix, o.prefix
	if len(a) > len(b) {
		a, b = b, a
	}
	if !strings.HasPrefix(b, a) || (len(b) > len(a) && !isDigit(b[len(a)])) {
		return false
	}
	a, b = f.suffix, o.suffix
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasSuffix(b, a) && (len(b) == len(a) || isDigit(b[len(b)-len(a)-1]))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// plain reports whether f is a prefix and the index alone (an id_prefix's ids).
func (f idForm) plain() bool { return f.suffix == "" && f.pad == 0 }

// idFormOf returns the ids a client_id template gives in group gi: its text before and
// after its one $clientindex (with its zero padding, $clientindex:W). The error says why a
// template cannot give unique ids.
func idFormOf(t string, gi int) (idForm, error) {
	if ph, ok := unknownPlaceholder(t); ok {
		return idForm{}, fmt.Errorf("unknown placeholder %s (want %s, with or without :W, and %s)", show(ph), PlaceholderIndex, PlaceholderGroup)
	}
	var f idForm
	seen := false
	for _, p := range splitParts(withGroup(t, gi)) {
		switch p.ph {
		case phNone:
			if seen {
				f.suffix += p.lit
			} else {
				f.prefix += p.lit
			}
		case phID:
			return idForm{}, fmt.Errorf("holds %s, the id it makes (want %s)", PlaceholderID, PlaceholderIndex)
		case phIndexMod:
			return idForm{}, fmt.Errorf("holds %s%%%d, a modulo, which gives clients the same id; ids must be unique", PlaceholderIndex, p.mod)
		default:
			if seen {
				return idForm{}, fmt.Errorf("holds %s twice (want it once)", PlaceholderIndex)
			}
			if p.pad < 0 || p.pad > MaxIndexPad {
				return idForm{}, fmt.Errorf("pads %s to %d digits (want :W with W from 1 to %d)", PlaceholderIndex, max(p.pad, 0), MaxIndexPad)
			}
			seen, f.pad = true, p.pad
		}
	}
	if !seen {
		return idForm{}, fmt.Errorf("has no %s: every client would have the same id; ids must be unique", PlaceholderIndex)
	}
	return f, nil
}

// applyIdentity sets, where a client_id template is given (the group's, else the
// scenario's), the ids it gives each group: IDPrefix, IDSuffix and IDPad.
func (s *Scenario) applyIdentity() {
	s.identityGroups(func(_ string, gi int, g *Group) {
		t := g.ClientID
		if t == "" {
			t = s.ClientID
		}
		if f, err := idFormOf(t, gi); t != "" && err == nil {
			g.IDPrefix, g.IDSuffix, g.IDPad = f.prefix, f.suffix, f.pad
		}
	})
}

// idSource returns the field that gives the client ids of group g at gp ("publishers." or
// "groups[2].") and its value: its client_id template, else the scenario's, else its
// id_prefix.
func (s *Scenario) idSource(gp string, g *Group) (path, value string) {
	switch {
	case g.ClientID != "":
		return gp + "client_id", g.ClientID
	case s.ClientID != "":
		return "client_id", s.ClientID
	}
	return gp + "id_prefix", g.IDPrefix
}

// checkIdentity checks the client_id templates and the credentials files: each file is
// read (once) and bound to each group it gives credentials to.
func (s *Scenario) checkIdentity(l *errList) {
	checkClientID(l, "client_id", s.ClientID)
	scenarioFileBad, said := false, map[string]bool{}
	if s.CredentialsFile != "" {
		if _, err := s.credsFor(s.CredentialsFile); err != nil {
			l.Add("credentials_file", "%v", err)
			scenarioFileBad = true
		}
	}
	s.identityGroups(func(path string, gi int, g *Group) {
		checkClientID(l, path+".client_id", g.ClientID)
		where := path + ".credentials_file"
		if g.CredentialsFile == "" {
			where = "credentials_file"
			if scenarioFileBad {
				return
			}
		}
		if g.ClientCount < 1 {
			return
		}
		if _, err := s.groupCreds(path, g); err != nil && !said[err.Error()] {
			said[err.Error()] = true // a row's problem is the same for every group
			l.Add(where, "%v", err)
		}
	})
}

// checkClientID checks a client_id template at path.
func checkClientID(l *errList, path, t string) {
	if t == "" {
		return
	}
	if _, err := idFormOf(t, 0); err != nil {
		l.Add(path, "%s %v", show(t), err)
	}
}

// groupIdentity is what a plan derives of a group's identity: its username and password
// templates ($groupindex expanded) and its credentials file's rows. A client's username and
// password are rendered when it is asked for (Plan.Client), never kept per client.
type groupIdentity struct {
	user, pass template
	creds      *credsBind // nil: no credentials file
}

// newGroupIdentity derives the identity of group g, the plan's group gid, whose credentials
// are cred's.
func (s *Scenario) newGroupIdentity(gid int, g *ClientGroup, cred *Server) groupIdentity {
	gi, path := groupIndexOf(s, gid, g)
	id := groupIdentity{
		user: compileTemplate(withGroup(cred.Username, gi)),
		pass: compileTemplate(withGroup(cred.Password, gi)),
	}
	id.creds, _ = s.groupCreds(path, &g.Group) // Validate reported its error
	return id
}

// credentials returns client j's username and password: its credentials file's columns
// where the file has them, else the templates expanded.
func (id *groupIdentity) credentials(j int, ids idForm) (user, pass string) {
	if b := id.creds; b != nil {
		r := b.row(j)
		if b.f.col[colUsername] >= 0 {
			user = b.f.cell(r, colUsername)
		} else {
			user = id.user.expand(j, ids)
		}
		if b.f.col[colPassword] >= 0 {
			pass = b.f.cell(r, colPassword)
		} else {
			pass = id.pass.expand(j, ids)
		}
		return user, pass
	}
	return id.user.expand(j, ids), id.pass.expand(j, ids)
}

// fileUsernames reports whether group g's credentials file (its own, else the scenario's)
// gives its clients' usernames; false when it has none or cannot be read (Validate says
// why).
func (s *Scenario) fileUsernames(g *Group) bool {
	name := g.CredentialsFile
	if name == "" {
		name = s.CredentialsFile
	}
	if name == "" {
		return false
	}
	e, err := s.credsFor(name)
	return err == nil && e.f.col[colUsername] >= 0
}
