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

// idPrefixOf returns the id prefix a client_id template gives in group gi: its text
// before the final $clientindex; ok is false for a template checkClientID refuses.
func idPrefixOf(t string, gi int) (prefix string, ok bool) {
	pre, ok := strings.CutSuffix(t, PlaceholderIndex)
	if !ok || strings.Contains(pre, "$client") {
		return "", false
	}
	return withGroup(pre, gi), true
}

// applyIdentity sets each group's index and, where a client_id template is given (the
// group's, else the scenario's), the id prefix it gives.
func (s *Scenario) applyIdentity() {
	s.identityGroups(func(_ string, gi int, g *Group) {
		t := g.ClientID
		if t == "" {
			t = s.ClientID
		}
		if pre, ok := idPrefixOf(t, gi); ok {
			g.IDPrefix = pre
		}
	})
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
	if _, ok := idPrefixOf(t, 0); !ok {
		l.Add(path, "%s: a client id template is text (with %s) that ends in %s, once: ids are that text and the "+
			"client's index, which topics' $clientid and the matching of subscriptions rely on", show(t), PlaceholderGroup, PlaceholderIndex)
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
func (id *groupIdentity) credentials(j int, prefix string) (user, pass string) {
	if b := id.creds; b != nil {
		r := b.row(j)
		if b.f.col[colUsername] >= 0 {
			user = b.f.cell(r, colUsername)
		} else {
			user = id.user.expand(j, prefix)
		}
		if b.f.col[colPassword] >= 0 {
			pass = b.f.cell(r, colPassword)
		} else {
			pass = id.pass.expand(j, prefix)
		}
		return user, pass
	}
	return id.user.expand(j, prefix), id.pass.expand(j, prefix)
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
