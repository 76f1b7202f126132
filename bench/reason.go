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
	// Beside CONNACK's: the codes of PUBACK, PUBREC, SUBACK and DISCONNECT (section 2.4).
	0x8b: "server_shutting_down", 0x8d: "keep_alive_timeout", 0x8e: "session_taken_over",
	0x8f: "topic_filter_invalid", 0x91: "packet_identifier_in_use", 0x92: "packet_identifier_not_found",
	0x93: "receive_maximum_exceeded", 0x94: "topic_alias_invalid", 0x96: "message_rate_too_high",
	0x98: "administrative_action", 0x9e: "shared_subscriptions_not_supported", 0xa0: "maximum_connect_time",
	0xa1: "subscription_identifiers_not_supported", 0xa2: "wildcard_subscriptions_not_supported",
}

// DisconnectName names the reason code of a broker's 5.0 DISCONNECT in snake_case.
func DisconnectName(code byte) string {
	switch code {
	case 0x00:
		return "normal_disconnection"
	case 0x04:
		return "disconnect_with_will_message"
	}
	return ReasonName(5, code)
}

// ReasonName names a refusal code in snake_case, as results report it: a CONNACK's (the
// 3.1.1 return codes of levels 3 and 4 and the 5.0 reason codes differ, so the version is
// needed), or a 5.0 PUBACK's, PUBREC's, SUBACK's or DISCONNECT's (version 5).
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
