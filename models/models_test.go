package models

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The embedded model is the file the card describes: its sha256 is written
// in the card, and it fits the 16 MB the repository allows.
func TestDefaultMatchesItsCard(t *testing.T) {
	m := Default()
	if len(m.Data) == 0 || len(m.Data) > 16<<20 {
		t.Fatalf("embedded model is %d bytes; want 1 byte to 16 MiB", len(m.Data))
	}
	if string(m.Data[:4]) != "GGUF" {
		t.Fatalf("embedded model does not start with the GGUF magic")
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(m.Data))
	if !strings.Contains(m.Card, sum) {
		t.Errorf("the card does not give the model's sha256 %s", sum)
	}
	// Its chain table is a CHNB file (the cmd/bitvk tests read it whole),
	// also named in the card.
	if len(m.Chains) < 4 || string(m.Chains[:4]) != "CHNB" {
		t.Errorf("the embedded chain table does not start with the CHNB magic")
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(m.Chains)); !strings.Contains(m.Card, sum) {
		t.Errorf("the card does not give the chain table's sha256 %s", sum)
	}
	path, remove, err := m.WriteTemp(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(m.Data) {
		t.Error("WriteTemp wrote other bytes")
	}
	remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("remove left %s", path)
	}
}
