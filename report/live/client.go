package live

import (
	"context"
	"io"
	"net/http"
	"strings"
)

// Ask makes a request of a run's steering API: method at url (http://ADDR/api/status), with
// token ("": none) as its bearer token and body, and returns the answer's status and body.
func Ask(ctx context.Context, method, url, token, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close() //nolint:errcheck
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
