package sink

// KeyLog takes a TLS connection's application traffic secrets from crypto/tls's key log,
// for a test's own record layer (KeyLogSecrets).
type KeyLog = keyLog

// KeyLogSecrets returns the client and server application traffic secrets k took.
func KeyLogSecrets(k *KeyLog) (client, server []byte) { return k.client, k.server }
