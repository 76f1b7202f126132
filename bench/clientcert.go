package bench

import (
	"errors"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

// ClientCerts are the client certificates of plan p's servers (scenario.CertSources), each
// made ready once: its pair read, or its CA read and checked. nil: no client has one.
// Errors name the scenario's file and field.
func ClientCerts(p *scenario.Plan) (map[scenario.ClientCert]*reactor.ClientCerts, error) {
	s := p.Scenario()
	var out map[scenario.ClientCert]*reactor.ClientCerts
	for _, src := range s.CertSources() {
		c := src.Cert
		cc, err := reactor.NewClientCerts(reactor.TLSOptions{CertFile: c.Cert, KeyFile: c.Key, ClientCA: c.CA,
			ClientCAKey: c.CAKey, CertSubject: c.Subject, CertSAN: c.SAN})
		if err != nil {
			field := "cert"
			switch {
			case errors.Is(err, reactor.ErrCertSAN):
				field = "client_cert_san"
			case c.CA != "":
				field = "client_ca_key"
			}
			return nil, &scenario.Error{File: s.File(), Path: src.Path + field, Msg: err.Error()}
		}
		if out == nil {
			out = map[scenario.ClientCert]*reactor.ClientCerts{}
		}
		out[c] = cc
	}
	return out, nil
}

// clientCert is the engine's Config.ClientCert of plan p with certificates certs.
func clientCert(p *scenario.Plan, certs map[scenario.ClientCert]*reactor.ClientCerts) func(int) (*reactor.ClientCerts, int) {
	if certs == nil {
		return nil
	}
	return func(i int) (*reactor.ClientCerts, int) {
		c := p.Client(i)
		if c.ClientCert == nil {
			return nil, 0
		}
		return certs[*c.ClientCert], c.Index
	}
}

// CheckClientCert makes the certificate of the plan's first client, when it has one of
// its own, so that a template naming no file, or a subject that expands to nothing, is
// refused before any socket opens. idStart numbers client ids as EngineConfig's.
func CheckClientCert(p *scenario.Plan, certs map[scenario.ClientCert]*reactor.ClientCerts, idStart int) error {
	if certs == nil || p.Len() == 0 {
		return nil
	}
	c := p.Client(0)
	if c.ClientCert == nil {
		return nil
	}
	id := c.ID
	if idStart != 0 {
		id = clientID(c, idStart)
	}
	if _, err := certs[*c.ClientCert].Certificate(id, c.Index); err != nil {
		s := p.Scenario()
		path := "server."
		for _, src := range s.CertSources() {
			if src.Cert == *c.ClientCert {
				path = src.Path
			}
		}
		field := "cert"
		switch {
		case errors.Is(err, reactor.ErrCertSAN):
			field = "client_cert_san"
		case c.ClientCert.CA != "":
			field = "client_cert_subject"
		}
		return &scenario.Error{File: s.File(), Path: path + field, Msg: err.Error()}
	}
	return nil
}
