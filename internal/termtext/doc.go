// Package termtext makes text that did not come from mqblast itself safe to print: a
// broker's or a server's words (a certificate's names in a TLS error, a WebSocket reply, a
// reason string), a process name read from /proc, and every string of a document read from
// disk (a result's broker, tool version, evidence, error examples, labels, scenario and
// campaign names). Every printer of such text, to a terminal, a log or a one-line header,
// passes it through Line (or Text, for multi-line messages) first.
//
// It promises that the output holds no control character (C0, DEL, C1), no bidirectional
// override or isolate, no line or paragraph separator and no invalid UTF-8: each is shown
// escaped (\n, \r, \t, \x1b, \u202e; an invalid byte as \xff), so that such text can
// neither move the cursor, retitle the window, recolour the terminal, reorder what follows,
// nor start a line of its own. Everything else, any printable Unicode, is kept as is.
// A backslash is kept too: the escaped form of a control character cannot be told from the
// same characters typed, which is fine for a reader, and it makes Line idempotent, so text
// escaped when it is recorded (a result's error examples) is not escaped again when it is
// printed. It returns its argument without allocating when there is nothing to escape.
//
// It does not quote for a shell, HTML or CSV: html/template, encoding/csv and the shell
// quoting of the commands mqblast prints do that for their formats.
package termtext
