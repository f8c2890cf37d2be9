package server

import (
	"net/http"
	"strings"
	"testing"
)

// A page on an origin of Config.CORSOrigins may call the API from a
// browser: its preflight is answered without the API key, and the answers
// carry Access-Control-Allow-Origin; any other origin gets no CORS headers
// (so the browser withholds the answer), as every origin does by default.
func TestCORS(t *testing.T) {
	const key, page, other = "sk-cors", "http://localhost:3000", "https://evil.example"
	body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`
	preflight := func(origin, method string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "authorization, content-type"}
	}
	auth := func(origin string) map[string]string {
		return map[string]string{"Origin": origin, "Authorization": "Bearer " + key}
	}
	type check struct {
		name, method, path string
		body               any
		hdr                map[string]string
		status             int
		allowOrigin        string // Access-Control-Allow-Origin, "" for none
		allowMethods       string
	}
	for _, c := range []struct {
		origins []string
		checks  []check
	}{
		{nil, []check{
			{"preflight, no origins allowed", http.MethodOptions, "/v1/chat/completions", nil, preflight(page, "POST"), 405, "", ""},
			{"request, no origins allowed", http.MethodPost, "/v1/chat/completions", body, auth(page), 200, "", ""},
		}},
		{[]string{page + "/"}, []check{
			{"preflight", http.MethodOptions, "/v1/chat/completions", nil, preflight(page, "POST"), 204, page, "POST"},
			{"preflight of a GET path", http.MethodOptions, "/v1/models", nil, preflight(page, "GET"), 204, page, "GET, HEAD"},
			{"request", http.MethodPost, "/v1/chat/completions", body, auth(page), 200, page, ""},
			{"request without the key", http.MethodPost, "/v1/chat/completions", body, map[string]string{"Origin": page}, 401, page, ""},
			{"health", http.MethodGet, "/health", nil, map[string]string{"Origin": page}, 200, page, ""},
			{"preflight, other origin", http.MethodOptions, "/v1/chat/completions", nil, preflight(other, "POST"), 405, "", ""},
			{"request, other origin", http.MethodPost, "/v1/chat/completions", body, auth(other), 200, "", ""},
			{"OPTIONS that is no preflight", http.MethodOptions, "/v1/chat/completions", nil, map[string]string{"Origin": page}, 405, page, ""},
		}},
		{[]string{"*"}, []check{
			{"preflight, any origin", http.MethodOptions, "/api/chat", nil, preflight(other, "POST"), 204, other, "POST"},
			{"request, any origin", http.MethodPost, "/v1/chat/completions", body, auth(other), 200, other, ""},
		}},
	} {
		ts := newTestServer(t, testOptions{edit: func(cfg *Config) { cfg.APIKey, cfg.CORSOrigins = key, c.origins }})
		for _, k := range c.checks {
			resp, b := ts.do(t, k.method, k.path, k.body, k.hdr)
			h := resp.Header
			if resp.StatusCode != k.status || h.Get("Access-Control-Allow-Origin") != k.allowOrigin || h.Get("Access-Control-Allow-Methods") != k.allowMethods {
				t.Errorf("origins %q, %s: %d, allow origin %q, methods %q (%s); want %d, %q, %q", c.origins, k.name, resp.StatusCode,
					h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Allow-Methods"), b, k.status, k.allowOrigin, k.allowMethods)
			}
			if k.status == 204 && !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
				t.Errorf("origins %q, %s: Access-Control-Allow-Headers %q lacks Authorization", c.origins, k.name, h.Get("Access-Control-Allow-Headers"))
			}
			if k.allowOrigin != "" && !strings.Contains(h.Get("Vary"), "Origin") {
				t.Errorf("origins %q, %s: Vary %q lacks Origin", c.origins, k.name, h.Get("Vary"))
			}
		}
	}
}

func TestCORSBadOrigin(t *testing.T) {
	for _, o := range []string{"localhost:3000", "http://localhost:3000/app", "http://u@localhost", "http://x?y=1", "", "**"} {
		if err := CheckOrigin(o); err == nil || !strings.Contains(err.Error(), "CORS origin") {
			t.Errorf("origin %q: %v; want an error naming the CORS origin", o, err)
		}
	}
	for _, o := range []string{"*", "http://localhost:3000", "https://example.com/", "app://obsidian.md"} {
		if err := CheckOrigin(o); err != nil {
			t.Errorf("origin %q: %v", o, err)
		}
	}
}
