// Package brokersys reads what a broker says about itself on $SYS: one MQTT connection of
// its own, subscribed to $SYS/# at QoS 0, read in its own goroutine with the codec package.
// It keeps the latest value of every $SYS topic (numbers parsed from the forms Mosquitto
// and mochi-mqtt publish: integers, floats, "N seconds"), the broker's version, how many
// $SYS messages it read and when the latest arrived, and reconnects with backoff when the
// connection drops, counting the gaps.
//
// Its figures are as fresh as the broker makes them: Mosquitto refreshes $SYS every
// sys_interval (10 s by default), mochi-mqtt every second, and some brokers publish
// nothing there. A broker that counts its $SYS messages among the messages it sent counts
// this reader's too: Reading says how many it read and where in the stream each value came.
//
// It must not print, log, or put the password in an error; text from the broker is kept
// escaped (termtext.Line).
package brokersys
