package server

import "strings"

// stopper finds a request's stop strings in the text of a reply as it is
// generated. A stop string can span tokens, so text that could be the start
// of one is held back until the text after it decides: it is released when
// it turns out not to be, and dropped, with everything after it, when it is.
// The text it releases is never part of a stop string.
//
// The held text is always the longest suffix of what came in that is a
// proper prefix of some stop string. A stop string starts with a whole
// UTF-8 character, so the cut falls between characters and every released
// piece of valid UTF-8 is valid UTF-8.
type stopper struct {
	stops []string
	held  string
	word  string // the stop string found, once one is
}

func newStopper(stops []string) *stopper { return &stopper{stops: stops} }

// feed takes the next piece of text and returns what can be released. With
// hit, a stop string was found: out is the text before it, and the reply ends.
func (s *stopper) feed(text string) (out string, hit bool) {
	if len(s.stops) == 0 {
		return text, false
	}
	buf := s.held + text
	cut := -1
	for _, stop := range s.stops {
		if i := strings.Index(buf, stop); i >= 0 && (cut < 0 || i < cut) {
			cut, s.word = i, stop
		}
	}
	if cut >= 0 {
		s.held = ""
		return buf[:cut], true
	}
	keep := 0
	for _, stop := range s.stops {
		keep = max(keep, suffixPrefix(buf, stop))
	}
	s.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush releases the held text: the reply has ended without completing a
// stop string.
func (s *stopper) flush() string {
	h := s.held
	s.held = ""
	return h
}

// suffixPrefix is the length of the longest suffix of buf that is a proper
// prefix of stop.
func suffixPrefix(buf, stop string) int {
	for n := min(len(buf), len(stop)-1); n > 0; n-- {
		if strings.HasSuffix(buf, stop[:n]) {
			return n
		}
	}
	return 0
}
