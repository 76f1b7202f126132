// Package brokers knows how to start the foreign MQTT brokers mqblast is tested and
// studied against, each on a port and in a directory of its own: RabbitMQ with its MQTT
// plugin, aedes (Node.js) and gmqtt (Go). Find says whether one is installed and, when it
// is not, the command that installs it; Plan says which files to write into its directory
// (Start.Write writes them) and the /bin/sh line that runs it in the foreground, in one
// process group that a SIGTERM stops cleanly (RabbitMQ's epmd included); Handshake says
// whether it accepts MQTT (a CONNECT gets a CONNACK).
//
// It is shared by the tests' starters (internal/testbroker) and the studies (study/), so
// that a study cell runs the broker the tests ran. It starts no process itself and prints
// nothing.
package brokers
