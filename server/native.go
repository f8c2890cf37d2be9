package server

import "net/http"

// slotsStatus is llama-server's GET /slots: each slot's state as of the
// last forward pass.
func (s *Server) slotsStatus(w http.ResponseWriter, _ *http.Request, _ *recorder) {
	writeJSON(w, http.StatusOK, s.w.status())
}
