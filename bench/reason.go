package bench

import "fmt"

var connack311 = map[byte]string{
	1: "bad_protocol_version", 2: "identifier_rejected", 3: "server_unavailable",
	4: "bad_username_or_password", 5: "not_authorized",
}

var connack5 = map[byte]string{
	0x80: "unspecified_error", 0x81: "malformed_packet", 0x82: "protocol_error",
	0x83: "implementation_specific_error", 0x84: "unsupported_protocol_version",
	0x85: "client_identifier_not_valid", 0x86: "bad_username_or_password", 0x87: "not_authorized",
	0x88: "server_unavailable", 0x89: "server_busy", 0x8a: "banned",
	0x8c: "bad_authentication_method", 0x90: "topic_name_invalid", 0x95: "packet_too_large",
	0x97: "quota_exceeded", 0x99: "payload_format_invalid", 0x9a: "retain_not_supported",
	0x9b: "qos_not_supported", 0x9c: "use_another_server", 0x9d: "server_moved",
	0x9f: "connection_rate_exceeded",
}

// ReasonName names a CONNACK refusal code in snake_case, as results report it: the 3.1.1
// return codes (levels 3 and 4) and the 5.0 reason codes differ, so the version is needed.
func ReasonName(version, code byte) string {
	m := connack311
	if version == 5 {
		m = connack5
	}
	if n, ok := m[code]; ok {
		return n
	}
	return fmt.Sprintf("code_0x%02x", code)
}
