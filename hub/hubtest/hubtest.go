// Package hubtest is a Hugging Face Hub for tests, on the loopback
// interface: it answers resolve and model-info requests for one repository
// the way the Hub does, and fails on request.
//
// The Hub host answers HEAD and GET of /ORG/REPO/resolve/REV/FILE with
// X-Repo-Commit and an ETag; an LFS file's answer is a 302 to the second
// host, the CDN, with X-Linked-Etag (the sha256 of the bytes) and
// X-Linked-Size. GET /api/models/ORG/REPO lists the files as "siblings".
// Both hosts serve "Range: bytes=N-" with 206. With Token set, the Hub
// answers 401 to requests without it; the CDN, like S3 behind the real
// one, answers 400 to any request that carries an Authorization header.
// Unknown repositories, revisions and files get 404 with the Hub's
// X-Error-Code.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// File is a file of the repository.
type File struct {
	Name string // its path in the repository
	Data []byte
	LFS  bool // stored in LFS: served by the CDN through a redirect
	// Etag replaces the etag the Hub reports (a wrong checksum); "": the
	// right one (sha256 for LFS, the git blob sha1 otherwise).
	Etag string
}

// Fault is one request answered badly. Faults queue per file and are used
// in order, each by the first request it applies to.
type Fault struct {
	// Method is the request the fault applies to: "HEAD" (the Hub's HEAD
	// of the resolve URL) or "GET" (a GET of the bytes, on whichever host
	// serves them).
	Method     string
	Status     int    // answer this status, with no body
	RetryAfter string // with Status: the Retry-After header
	// CutAfter, when positive, ends the body after this many bytes by
	// dropping the connection (the Content-Length promised more).
	CutAfter int64
	// Stall, with CutAfter, keeps the connection open after the bytes
	// until the client goes away; the file's name is sent on Stalled then.
	Stall bool
	// IgnoreRange answers a Range request with the whole file (200).
	IgnoreRange bool
}

// Request is a request the server received.
type Request struct {
	Host   string // "hub" or "cdn"
	Method string
	Path   string
	Range  string // the Range header
	Auth   string // the Authorization header
	Status int    // the status answered
}

// Server is a fake Hub for one repository.
type Server struct {
	Repo   string // ORG/REPO
	Commit string // what X-Repo-Commit says: 40 hex digits
	Token  string // when set, the Hub wants "Authorization: Bearer Token"
	// Stalled receives a file's name when a Stall fault holds its
	// connection open (buffered: it never blocks the server).
	Stalled chan string

	hub, cdn *httptest.Server
	mu       sync.Mutex
	files    map[string]File
	faults   map[string][]Fault
	log      []Request
}

// New starts a Hub serving repo with files; Close stops it.
func New(repo string, files ...File) *Server {
	s := &Server{
		Repo:    repo,
		Commit:  GitSHA1([]byte(repo)), // any 40 hex digits
		Stalled: make(chan string, 16),
		files:   map[string]File{},
		faults:  map[string][]Fault{},
	}
	for _, f := range files {
		s.files[f.Name] = f
	}
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.cdn = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	return s
}

// URL is the Hub's address, for HF_ENDPOINT.
func (s *Server) URL() string { return s.hub.URL }

// CDNURL is the CDN's address.
func (s *Server) CDNURL() string { return s.cdn.URL }

// Close stops both hosts.
func (s *Server) Close() {
	// The listeners first: a client that retries the moment its connection
	// drops must find no server (closing the connections first let such a
	// retry in, and download the file, when the machine was busy).
	s.hub.Listener.Close()
	s.cdn.Listener.Close()
	s.hub.CloseClientConnections()
	s.cdn.CloseClientConnections()
	s.hub.Close()
	s.cdn.Close()
}

// Put adds or replaces a file.
func (s *Server) Put(f File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[f.Name] = f
}

// Inject queues faults for a file.
func (s *Server) Inject(file string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[file] = append(s.faults[file], faults...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Downloads counts the GET requests that received bytes of file (on the
// Hub for a plain file, on the CDN for an LFS one).
func (s *Server) Downloads(file string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.log {
		if r.Method == http.MethodGet && (r.Status == http.StatusOK || r.Status == http.StatusPartialContent) && strings.HasSuffix(r.Path, "/"+file) {
			n++
		}
	}
	return n
}

// SHA256 is the hex sha256 of data: an LFS file's etag.
func SHA256(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// GitSHA1 is git's blob id of data: a plain file's etag.
func GitSHA1(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) record(host string, r *http.Request, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{Host: host, Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization"), Status: status})
}

// fault takes the next fault of file for method, if any.
func (s *Server) fault(file, method string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[file]
	for i, f := range q {
		if f.Method == method {
			s.faults[file] = append(q[:i:i], q[i+1:]...)
			return f, true
		}
	}
	return Fault{}, false
}

func (s *Server) file(name string) (File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[name]
	return f, ok
}

func (s *Server) etag(f File) string {
	switch {
	case f.Etag != "":
		return f.Etag
	case f.LFS:
		return SHA256(f.Data)
	}
	return GitSHA1(f.Data)
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	s.answer("hub", w, r, s.hubAnswer)
}

// answer runs an answer function with a writer that logs the request when
// its status goes out, before any byte of the body: a client that has read
// the whole reply finds its request in Requests.
func (s *Server) answer(host string, w http.ResponseWriter, r *http.Request, f func(http.ResponseWriter, *http.Request) int) {
	rw := &recorder{ResponseWriter: w, log: func(status int) { s.record(host, r, status) }}
	status := f(rw, r)
	if !rw.logged {
		rw.WriteHeader(status)
	}
}

// recorder logs the status of a reply as it is written.
type recorder struct {
	http.ResponseWriter
	log    func(status int)
	logged bool
}

func (w *recorder) WriteHeader(status int) {
	if !w.logged {
		w.logged = true
		w.log(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if !w.logged {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) hubAnswer(w http.ResponseWriter, r *http.Request) int {
	fail := func(status int, code string) int {
		if code != "" {
			w.Header().Set("X-Error-Code", code)
		}
		w.WriteHeader(status)
		return status
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		return fail(http.StatusUnauthorized, "")
	}
	if repo, ok := strings.CutPrefix(r.URL.Path, "/api/models/"); ok {
		if repo != s.Repo {
			return fail(http.StatusNotFound, "RepoNotFound")
		}
		return s.serveInfo(w)
	}
	// /ORG/REPO/resolve/REV/FILE
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) != 5 || parts[2] != "resolve" {
		return fail(http.StatusNotFound, "")
	}
	if parts[0]+"/"+parts[1] != s.Repo {
		return fail(http.StatusNotFound, "RepoNotFound")
	}
	if parts[3] != "main" && parts[3] != s.Commit {
		return fail(http.StatusNotFound, "RevisionNotFound")
	}
	w.Header().Set("X-Repo-Commit", s.Commit)
	f, ok := s.file(parts[4])
	if !ok {
		return fail(http.StatusNotFound, "EntryNotFound")
	}
	if r.Method == http.MethodHead {
		if flt, ok := s.fault(f.Name, http.MethodHead); ok && flt.Status != 0 {
			if flt.RetryAfter != "" {
				w.Header().Set("Retry-After", flt.RetryAfter)
			}
			return fail(flt.Status, "")
		}
	}
	if f.LFS {
		w.Header().Set("X-Linked-Etag", `"`+s.etag(f)+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
		w.Header().Set("ETag", `"`+GitSHA1([]byte("version https://git-lfs.github.com/spec/v1\n"))+`"`) // the pointer's
		w.Header().Set("Location", s.cdn.URL+"/repos/"+SHA256(f.Data)+"/"+f.Name+"?X-Amz-Signature=0123abcd")
		w.WriteHeader(http.StatusFound)
		return http.StatusFound
	}
	w.Header().Set("ETag", `"`+s.etag(f)+`"`)
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	}
	return s.serveBytes(w, r, f)
}

func (s *Server) serveInfo(w http.ResponseWriter) int {
	s.mu.Lock()
	type sibling struct {
		RFilename string `json:"rfilename"`
	}
	info := struct {
		ID       string    `json:"id"`
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{ID: s.Repo, SHA: s.Commit, Siblings: []sibling{}}
	for name := range s.files {
		info.Siblings = append(info.Siblings, sibling{name})
	}
	s.mu.Unlock()
	sort.Slice(info.Siblings, func(i, j int) bool { return info.Siblings[i].RFilename < info.Siblings[j].RFilename })
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(info)
	return http.StatusOK
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	s.answer("cdn", w, r, s.cdnAnswer)
}

func (s *Server) cdnAnswer(w http.ResponseWriter, r *http.Request) int {
	if r.Header.Get("Authorization") != "" {
		w.WriteHeader(http.StatusBadRequest) // S3: "Only one auth mechanism allowed"
		return http.StatusBadRequest
	}
	// /repos/SHA256/FILE
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	f, ok := File{}, false
	if len(parts) == 3 && parts[0] == "repos" {
		f, ok = s.file(parts[2])
	}
	if !ok || !f.LFS || SHA256(f.Data) != parts[1] {
		w.WriteHeader(http.StatusForbidden) // as S3 answers an unknown key
		return http.StatusForbidden
	}
	w.Header().Set("ETag", `"`+SHA256(f.Data)+`"`)
	return s.serveBytes(w, r, f)
}

// serveBytes sends f's bytes, from the Range start if there is one,
// applying a body fault queued for GET.
func (s *Server) serveBytes(w http.ResponseWriter, r *http.Request, f File) int {
	var flt Fault
	if r.Method == http.MethodGet {
		flt, _ = s.fault(f.Name, http.MethodGet)
	}
	if flt.Status != 0 {
		if flt.RetryAfter != "" {
			w.Header().Set("Retry-After", flt.RetryAfter)
		}
		w.WriteHeader(flt.Status)
		return flt.Status
	}
	size := int64(len(f.Data))
	from := int64(0)
	status := http.StatusOK
	if v, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes="); ok && !flt.IgnoreRange {
		start, end, _ := strings.Cut(v, "-")
		n, err := strconv.ParseInt(start, 10, 64)
		if err != nil || end != "" || n < 0 {
			w.WriteHeader(http.StatusBadRequest) // only "bytes=N-" is expected of bitvk
			return http.StatusBadRequest
		}
		if n >= size {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return http.StatusRequestedRangeNotSatisfiable
		}
		from, status = n, http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, size-1, size))
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Length", strconv.FormatInt(size-from, 10))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return status
	}
	if flt.CutAfter <= 0 {
		w.Write(f.Data[from:])
		return status
	}
	end := min(from+flt.CutAfter, size)
	w.Write(f.Data[from:end])
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	if flt.Stall {
		select {
		case s.Stalled <- f.Name:
		default:
		}
		<-r.Context().Done()
	}
	panic(http.ErrAbortHandler)
}
