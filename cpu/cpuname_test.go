package cpu

import (
	"strings"
	"testing"
	"unicode"
)

// TestName: the CPU's name is one printable line, and on amd64 with the
// assembly it names the vendor, family and model.
func TestName(t *testing.T) {
	n := Name()
	if n == "" || strings.ContainsFunc(n, func(r rune) bool { return !unicode.IsPrint(r) }) {
		t.Fatalf("Name() = %q: want one printable line", n)
	}
	if len(asmKernelSets()) > 0 && !strings.Contains(n, " family 0x") {
		t.Errorf("Name() = %q: want the vendor, family and model", n)
	}
	t.Log(n)
}
