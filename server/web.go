package server

import (
	"embed"
	"net/http"
	"path"
)

// The chat page: plain HTML, CSS and JavaScript, embedded in the binary and
// served as they are (no build step, no external URL: the Content Security
// Policy lets the page reach only this server).
//
//go:embed web/index.html web/app.js web/style.css
var webFiles embed.FS

var webTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// servePage serves / (index.html), /app.js and /style.css.
func servePage(w http.ResponseWriter, r *http.Request, _ *recorder) {
	name := path.Base(r.URL.Path)
	if r.URL.Path == "/" {
		name = "index.html"
	}
	b, err := webFiles.ReadFile("web/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", webTypes[path.Ext(name)])
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}
