// Package secret owns what every part of mqblast agrees on about the broker password: the
// environment variable that carries it to a child process (PasswordEnv, never argv; the
// passwords of client groups' own servers in GroupPasswordsEnv), the marker that stands
// for it in every document, page, log and command line mqblast writes (Marker), and the
// redaction of a password found in a document written elsewhere (RedactJSON, RedactURL).
//
// It must not log or print, and never puts a password in an error.
package secret
