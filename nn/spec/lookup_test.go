package spec

import (
	"slices"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Lookup
		seq  []int32
		max  int
		want []int32
	}{
		{"three tokens", Lookup{}, []int32{1, 2, 3, 4, 5, 9, 2, 3, 4}, 8, []int32{5, 9, 2, 3, 4}},
		{"max cuts", Lookup{}, []int32{1, 2, 3, 4, 5, 9, 2, 3, 4}, 2, []int32{5, 9}},
		{"the longest match wins over a later shorter one", Lookup{}, []int32{7, 8, 9, 1, 5, 8, 9, 2, 6, 7, 8, 9}, 3, []int32{1, 5, 8}},
		{"the most recent of equal matches", Lookup{}, []int32{8, 9, 1, 8, 9, 2, 8, 9}, 1, []int32{2}},
		{"down to one token", Lookup{}, []int32{5, 6, 7, 1, 6}, 8, []int32{7, 1, 6}},
		{"MinN 2 refuses a one-token match", Lookup{MinN: 2, MaxN: 3}, []int32{5, 6, 7, 1, 6}, 8, nil},
		{"no match", Lookup{}, []int32{1, 2, 3, 4}, 8, nil},
		{"a continuation running into the key", Lookup{}, []int32{4, 4, 4, 4}, 8, []int32{4}},
		{"one token", Lookup{}, []int32{4}, 8, nil},
		{"empty", Lookup{}, nil, 8, nil},
		{"max 0", Lookup{}, []int32{1, 2, 1, 2}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.l.Draft([]int32{42}, tc.seq, tc.max)
			if got[0] != 42 || !slices.Equal(got[1:], tc.want) {
				t.Errorf("Draft(%v, %d) = %v, want 42 then %v", tc.seq, tc.max, got, tc.want)
			}
		})
	}
}

type fixed []int32

func (f fixed) Draft(dst, _ []int32, max int) []int32 { return append(dst, f[:min(max, len(f))]...) }

func TestFirstAndAuto(t *testing.T) {
	seq := []int32{1, 2, 3, 9, 1, 2}
	if got := (First{fixed(nil), fixed{7, 7}, fixed{8}}).Draft(nil, seq, 8); !slices.Equal(got, []int32{7, 7}) {
		t.Errorf("First = %v, want the first non-empty draft", got)
	}
	if got := Auto(fixed{5}).Draft(nil, seq, 8); !slices.Equal(got, []int32{3, 9, 1, 2}) {
		t.Errorf("Auto with a two-token match = %v, want the lookup's", got)
	}
	if got := Auto(fixed{5}).Draft(nil, []int32{1, 2, 3, 1}, 8); !slices.Equal(got, []int32{5}) {
		t.Errorf("Auto with only a one-token match = %v, want the chains'", got)
	}
	if got := Auto(nil).Draft(nil, []int32{1, 2, 3, 1}, 8); !slices.Equal(got, []int32{2, 3, 1}) {
		t.Errorf("Auto without chains = %v, want the one-token lookup's", got)
	}
}

func BenchmarkLookupMiss(b *testing.B) {
	seq := make([]int32, 4096)
	for i := range seq {
		seq[i] = int32(i)
	}
	dst := make([]int32, 0, 8)
	for b.Loop() {
		dst = Lookup{}.Draft(dst[:0], seq, 8)
	}
}
