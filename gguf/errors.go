package gguf

import "fmt"

// FormatError reports a malformed GGUF file: what was wrong, in which field,
// and at which byte offset of the file. Every parse failure is a *FormatError,
// so callers can print one line that names the field and the place.
type FormatError struct {
	Offset int64  // byte offset in the file where the bad field starts
	Field  string // what was being read, e.g. `tensor "blk.3.ffn_up.weight" data`
	Msg    string // what was wrong with it and, where it helps, what to do
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s (field at byte %d): %s", e.Field, e.Offset, e.Msg)
}

func errAt(off int64, field, format string, args ...any) *FormatError {
	return &FormatError{Offset: off, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// KeyError reports a metadata key that is missing or holds a value of the
// wrong type for the accessor that asked for it.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("gguf: metadata key %q: %s", e.Key, e.Msg)
}
