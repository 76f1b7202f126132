package brokers

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
)

// aedesDir is where `npm install --prefix` puts aedes.
func aedesDir() string { return filepath.Join(CacheDir(), "aedes") }

func findAedes() (*Installation, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, &notInstalled{Aedes, "no node on PATH", "Node.js 20 or later with npm (nodejs.org), then " + Install(Aedes)}
	}
	mod := filepath.Join(aedesDir(), "node_modules", "aedes")
	b, err := os.ReadFile(filepath.Join(mod, "package.json"))
	if err != nil {
		return nil, &notInstalled{Aedes, "no " + mod, Install(Aedes)}
	}
	var pkg struct{ Version string }
	_ = json.Unmarshal(b, &pkg)
	lib := filepath.Join(mod, "aedes.js")
	if _, err := os.Stat(lib); err != nil {
		return nil, &notInstalled{Aedes, fmt.Sprintf("%s has no aedes.js (aedes %s; mqblast starts aedes 1.x)", mod, pkg.Version), Install(Aedes)}
	}
	return &Installation{Kind: Aedes, Version: pkg.Version, StartTimeout: StartTimeout(Aedes), bin: node, lib: lib}, nil
}

// aedesServer is the server: aedes 1.x (an ES module: Aedes.createBroker) behind
// net.createServer, stopped on SIGTERM or SIGINT by closing the listener and the broker.
func aedesServer(lib, version string) string {
	u := url.URL{Scheme: "file", Path: lib}
	return fmt.Sprintf(`// written by mqblast: aedes %[1]s on the host and port its arguments give (node server.mjs PORT HOST)
import { createServer } from 'node:net'
const { Aedes } = await import(%[2]q)

const port = Number(process.argv[2])
const host = process.argv[3] || '127.0.0.1'
const broker = await Aedes.createBroker()
const server = createServer(broker.handle)
server.on('error', (err) => { console.error('aedes: ' + err.message); process.exit(1) })
server.listen(port, host, () => console.log('aedes %[1]s listening on ' + host + ':' + port))
const stop = () => { server.close(); broker.close(() => process.exit(0)) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
`, version, u.String())
}

func (in *Installation) planAedes(c Config) *Start {
	st := &Start{Dir: c.Dir, Files: []File{{"server.mjs", aedesServer(in.lib, in.Version), 0o644}}}
	st.Line = fmt.Sprintf("cd %s && exec %s %s %d %s", Quote(c.Dir), Quote(in.bin), Quote(st.path("server.mjs")), c.Port, Quote(c.Host))
	return st
}
