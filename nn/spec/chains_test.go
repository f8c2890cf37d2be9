package spec

import (
	"bytes"
	"testing"
)

// draftTable is a table with overlapping keys of every length.
func draftTable() *Chains {
	c := new(Chains)
	c.Entries[0] = Chain{Tokens: []int32{10, 11, 12, 13, 14}, Confidence: 0.2} // 3-key 10 11 12, 2-key 10 11, 1-key 10
	c.Entries[1] = Chain{Tokens: []int32{10, 11, 20}, Confidence: 0.6}         // 2-key 10 11 (wins), 1-key 10 (wins)
	c.Entries[2] = Chain{Tokens: []int32{30, 31}, Confidence: 0.5}             // 1-key 30: tie with entry 3, lowest id wins
	c.Entries[3] = Chain{Tokens: []int32{30, 32}, Confidence: 0.5}
	c.Entries[4] = Chain{Tokens: []int32{40}, Confidence: 1}                   // one token: never matches
	c.Entries[5] = Chain{Tokens: []int32{50, 51}, Confidence: 0}               // matches even at confidence 0
	c.Entries[6] = Chain{Tokens: []int32{60, 61, 62, 63}, Confidence: 0.1}     // 3-key 60 61 62 drafts 63
	c.Entries[7] = Chain{Tokens: []int32{61, 62, 70, 71, 72}, Confidence: 0.9} // 2-key 61 62: beaten by the 3-key above
	c.Entries[8] = Chain{Tokens: []int32{80, 81, 82}, Confidence: 0.3}
	c.Entries[9] = Chain{Tokens: []int32{80, 81, 82, 83, 84, 85, 86, 87}, Confidence: 0.4} // 3-key 80 81 82 only it has
	// Entries 10…255 are empty.
	return c
}

func TestDraft(t *testing.T) {
	c := draftTable()
	for _, tc := range []struct {
		name string
		seq  []int32
		max  int
		want []int32
	}{
		{"3-token match", []int32{1, 10, 11, 12}, 8, []int32{13, 14}},
		{"2-token match, highest confidence", []int32{5, 10, 11}, 8, []int32{20}},
		{"1-token match, highest confidence", []int32{10}, 8, []int32{11, 20}},
		{"1-token match after another token", []int32{99, 10}, 8, []int32{11, 20}},
		{"equal confidence: lowest id", []int32{30}, 8, []int32{31}},
		{"longest key beats higher confidence", []int32{60, 61, 62}, 8, []int32{63}},
		{"2-token key where the 3-token one fails", []int32{0, 61, 62}, 8, []int32{70, 71, 72}},
		{"a longer chain is the only 3-key match", []int32{80, 81, 82}, 8, []int32{83, 84, 85, 86, 87}},
		{"2-token match, the longer chain's higher confidence", []int32{9, 80, 81}, 8, []int32{82, 83, 84, 85, 86, 87}},
		{"cut to max", []int32{80, 81, 82}, 2, []int32{83, 84}},
		{"max 0", []int32{10}, 0, nil},
		{"negative max", []int32{10}, -1, nil},
		{"confidence 0 still drafts", []int32{50}, 8, []int32{51}},
		{"one-token entry never matches", []int32{40}, 8, nil},
		{"no match", []int32{1, 2, 3}, 8, nil},
		{"key at the end only", []int32{10, 11, 12, 7}, 8, nil},
		{"empty sequence", nil, 8, nil},
		{"token 0 is a key like any other (empty entries have none)", []int32{0}, 8, nil},
	} {
		got := c.Draft(nil, tc.seq, tc.max)
		if !equalTokens(got, tc.want) {
			t.Errorf("%s: Draft(%v, %d) = %v, want %v", tc.name, tc.seq, tc.max, got, tc.want)
		}
	}
}

// The 2-key 80 81 has entries 8 (0.3) and 9 (0.4): entry 9 wins; once
// their confidences tie, the lower id does.
func TestDraftTwoKeyTie(t *testing.T) {
	c := draftTable()
	if got := c.Draft(nil, []int32{9, 80, 81}, 8); !equalTokens(got, []int32{82, 83, 84, 85, 86, 87}) {
		t.Errorf("Draft = %v, want entry 9's 82…87", got)
	}
	c.Entries[8].Confidence = 0.4 // now a tie: the lower id, 8, wins
	c.Reindex()
	if got := c.Draft(nil, []int32{9, 80, 81}, 8); !equalTokens(got, []int32{82}) {
		t.Errorf("after Reindex, Draft = %v, want entry 8's 82", got)
	}
}

func TestDraftAppendsWithoutAllocating(t *testing.T) {
	c := draftTable()
	dst := make([]int32, 2, 16)
	dst[0], dst[1] = -7, -8
	got := c.Draft(dst, []int32{1, 10, 11, 12}, 8)
	if !equalTokens(got, []int32{-7, -8, 13, 14}) {
		t.Fatalf("Draft = %v, want the draft appended to dst", got)
	}
	seq := []int32{5, 80, 81, 82}
	if n := testing.AllocsPerRun(100, func() { dst = c.Draft(dst[:0], seq, 8) }); n != 0 {
		t.Errorf("Draft allocates %v times per call", n)
	}
	var nilTable *Chains
	if got := nilTable.Draft(nil, seq, 8); got != nil {
		t.Errorf("a nil table drafted %v", got)
	}
}

// A table read from bytes drafts as the one it was written from.
func TestDraftAfterRead(t *testing.T) {
	b, err := draftTable().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadChains(bytes.NewReader(b), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Draft(nil, []int32{1, 10, 11, 12}, 8); !equalTokens(got, []int32{13, 14}) {
		t.Errorf("Draft = %v", got)
	}
	empty := new(Chains)
	if got := empty.Draft(nil, []int32{0, 0, 0}, 8); got != nil {
		t.Errorf("an empty table drafted %v", got)
	}
}
