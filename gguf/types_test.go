// Tests for the type table: names, block geometry, DataSize and its errors.
package gguf

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// typeRows is the table from the spec, written out independently of
// typeTable.
var typeRows = []struct {
	t      Type
	id     uint32
	name   string
	bs, bb int
}{
	{TypeF32, 0, "F32", 1, 4}, {TypeF16, 1, "F16", 1, 2},
	{TypeQ4_0, 2, "Q4_0", 32, 18}, {TypeQ4_1, 3, "Q4_1", 32, 20},
	{TypeQ5_0, 6, "Q5_0", 32, 22}, {TypeQ5_1, 7, "Q5_1", 32, 24},
	{TypeQ8_0, 8, "Q8_0", 32, 34}, {TypeQ8_1, 9, "Q8_1", 32, 36},
	{TypeQ2_K, 10, "Q2_K", 256, 84}, {TypeQ3_K, 11, "Q3_K", 256, 110},
	{TypeQ4_K, 12, "Q4_K", 256, 144}, {TypeQ5_K, 13, "Q5_K", 256, 176},
	{TypeQ6_K, 14, "Q6_K", 256, 210}, {TypeQ8_K, 15, "Q8_K", 256, 292},
	{TypeIQ2_XXS, 16, "IQ2_XXS", 256, 66}, {TypeIQ2_XS, 17, "IQ2_XS", 256, 74},
	{TypeIQ3_XXS, 18, "IQ3_XXS", 256, 98}, {TypeIQ1_S, 19, "IQ1_S", 256, 50},
	{TypeIQ4_NL, 20, "IQ4_NL", 32, 18}, {TypeIQ3_S, 21, "IQ3_S", 256, 110},
	{TypeIQ2_S, 22, "IQ2_S", 256, 82}, {TypeIQ4_XS, 23, "IQ4_XS", 256, 136},
	{TypeI8, 24, "I8", 1, 1}, {TypeI16, 25, "I16", 1, 2},
	{TypeI32, 26, "I32", 1, 4}, {TypeI64, 27, "I64", 1, 8},
	{TypeF64, 28, "F64", 1, 8}, {TypeIQ1_M, 29, "IQ1_M", 256, 56},
	{TypeBF16, 30, "BF16", 1, 2}, {TypeTQ1_0, 34, "TQ1_0", 256, 54},
	{TypeTQ2_0, 35, "TQ2_0", 256, 66}, {TypeI2_S, 36, "I2_S", 128, 32},
	{TypeI8_S, 37, "I8_S", 1, 1}, {TypeTL1, 38, "TL1", 1, 1},
	{TypeTL2, 39, "TL2", 1, 1},
}

func TestTypeTable(t *testing.T) {
	decodable := map[Type]bool{TypeF32: true, TypeF16: true, TypeBF16: true, TypeQ4_0: true, TypeQ8_0: true,
		TypeQ6_K: true, TypeTQ1_0: true, TypeTQ2_0: true, TypeI2_S: true}
	ternary := map[Type]bool{TypeTQ1_0: true, TypeTQ2_0: true, TypeI2_S: true, TypeTL1: true, TypeTL2: true}
	for _, r := range typeRows {
		if uint32(r.t) != r.id {
			t.Errorf("%s: id %d, want %d", r.name, uint32(r.t), r.id)
		}
		if got := r.t.String(); got != r.name {
			t.Errorf("Type(%d).String() = %q, want %q", r.id, got, r.name)
		}
		if !r.t.Known() {
			t.Errorf("%s: Known() = false", r.name)
		}
		if r.t.BlockSize() != r.bs || r.t.BlockBytes() != r.bb {
			t.Errorf("%s: block %d values/%d bytes, want %d/%d", r.name, r.t.BlockSize(), r.t.BlockBytes(), r.bs, r.bb)
		}
		if got, want := r.t.StorageBits(), float64(r.bb*8)/float64(r.bs); got != want {
			t.Errorf("%s: StorageBits() = %g, want %g", r.name, got, want)
		}
		if r.t.CanDecode() != decodable[r.t] {
			t.Errorf("%s: CanDecode() = %v", r.name, r.t.CanDecode())
		}
		if r.t.Ternary() != ternary[r.t] {
			t.Errorf("%s: Ternary() = %v", r.name, r.t.Ternary())
		}
	}
	for _, tc := range []struct {
		t    Type
		bits float64
	}{{TypeI2_S, 2}, {TypeTQ2_0, 2.0625}, {TypeTQ1_0, 1.6875}, {TypeQ8_0, 8.5}, {TypeF32, 32}, {Type(99), 0}} {
		if got := tc.t.StorageBits(); got != tc.bits {
			t.Errorf("%v.StorageBits() = %g, want %g", tc.t, got, tc.bits)
		}
	}
}

func TestUnknownTypes(t *testing.T) {
	known := map[uint32]bool{}
	for _, r := range typeRows {
		known[r.id] = true
	}
	ids := []uint32{math.MaxUint32, 1 << 31, 1000}
	for id := uint32(0); id < 64; id++ {
		ids = append(ids, id)
	}
	for _, id := range ids {
		ty := Type(id)
		if known[id] {
			continue
		}
		if ty.Known() || ty.BlockSize() != 0 || ty.BlockBytes() != 0 || ty.StorageBits() != 0 ||
			ty.CanDecode() || ty.Ternary() {
			t.Errorf("unknown id %d reports as known", id)
		}
		if got, want := ty.String(), "type "+strconv.FormatUint(uint64(id), 10); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
		if _, err := DataSize(ty, 256); err == nil {
			t.Errorf("DataSize(type %d) gave no error", id)
		}
	}
	for _, id := range []uint32{4, 5, 31, 32, 33, 40} {
		if Type(id).Known() {
			t.Errorf("id %d should be unknown", id)
		}
	}
}

func TestParseType(t *testing.T) {
	for _, r := range typeRows {
		for _, s := range []string{r.name, strings.ToLower(r.name), r.t.String()} {
			got, err := ParseType(s)
			if err != nil || got != r.t {
				t.Errorf("ParseType(%q) = %v, %v; want %v", s, got, err, r.t)
			}
		}
	}
	for _, s := range []string{"", "Q4_2", "type 36", "I2S", " F32"} {
		_, err := ParseType(s)
		if err == nil || !strings.Contains(err.Error(), "\""+s+"\"") {
			t.Errorf("ParseType(%q): err = %v, want one naming %q", s, err, s)
		}
	}
}

func TestDataSize(t *testing.T) {
	for _, r := range typeRows {
		for _, blocks := range []uint64{0, 1, 3, 1000} {
			n := blocks * uint64(r.bs)
			want := blocks * uint64(r.bb)
			if r.t == TypeI2_S {
				want = n/4 + 32
			}
			got, err := DataSize(r.t, n)
			if err != nil || got != want {
				t.Errorf("DataSize(%s, %d) = %d, %v; want %d", r.name, n, got, err, want)
			}
		}
	}
	// Spot values written out by hand.
	for _, tc := range []struct {
		t    Type
		n    uint64
		want uint64
	}{
		{TypeI2_S, 128, 64}, {TypeI2_S, 2560 * 2560, 2560*640 + 32},
		{TypeTQ2_0, 512, 132}, {TypeTQ1_0, 256, 54}, {TypeQ6_K, 4096, 3360},
		{TypeF16, 7, 14}, {TypeF32, 3, 12},
	} {
		if got, err := DataSize(tc.t, tc.n); err != nil || got != tc.want {
			t.Errorf("DataSize(%v, %d) = %d, %v; want %d", tc.t, tc.n, got, err, tc.want)
		}
	}
}

func TestDataSizeErrors(t *testing.T) {
	for _, tc := range []struct {
		t        Type
		n        uint64
		contains []string
	}{
		{TypeQ8_0, 33, []string{"Q8_0", "33", "32"}},
		{TypeI2_S, 64, []string{"I2_S", "64", "128"}},
		{TypeI2_S, 130, []string{"I2_S", "130", "128"}},
		{TypeTQ2_0, 128, []string{"TQ2_0", "128", "256"}},
		{TypeQ6_K, 1, []string{"Q6_K", "1", "256"}},
		{Type(4), 32, []string{"type 4"}},
		{Type(77), 32, []string{"type 77"}},
		{TypeQ8_0, math.MaxUint64 / 32 * 32, []string{"Q8_0", "overflow"}},
		{TypeF64, math.MaxUint64, []string{"F64", "overflow"}},
		{TypeQ8_K, math.MaxUint64 / 256 * 256, []string{"Q8_K", "overflow"}},
	} {
		_, err := DataSize(tc.t, tc.n)
		if err == nil {
			t.Errorf("DataSize(%v, %d): no error", tc.t, tc.n)
			continue
		}
		for _, s := range tc.contains {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("DataSize(%v, %d): error %q does not mention %q", tc.t, tc.n, err, s)
			}
		}
	}
	// Largest sizes that still fit do not error.
	if got, err := DataSize(TypeI2_S, math.MaxUint64/128*128); err != nil || got != math.MaxUint64/128*32+32 {
		t.Errorf("DataSize(I2_S, max) = %d, %v", got, err)
	}
	if got, err := DataSize(TypeI8, math.MaxUint64); err != nil || got != math.MaxUint64 {
		t.Errorf("DataSize(I8, max) = %d, %v", got, err)
	}
}
