package spirv

import (
	"encoding/binary"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// Every embedded file is a named kernel, every kernel is embedded, and each
// is a SPIR-V module (the magic number, whole words).
func TestKernelsEmbedded(t *testing.T) {
	names, err := fs.Glob(files, "*.spv")
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, k := range Kernels() {
		ks = append(ks, string(k)+".spv")
		b, err := Code(k)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 20 || len(b)%4 != 0 || binary.LittleEndian.Uint32(b) != 0x07230203 {
			t.Errorf("%s is not a SPIR-V module (%d bytes)", k, len(b))
		}
	}
	slices.Sort(ks)
	if strings.Join(ks, " ") != strings.Join(names, " ") {
		t.Errorf("embedded files %v, named kernels %v", names, ks)
	}
	if _, err := Code("nope"); err == nil {
		t.Error("Code(nope) did not fail")
	}
}

// Variant finds the subgroup and dot-product twins a kernel has, and only those.
func TestVariant(t *testing.T) {
	for _, tc := range []struct {
		k             Kernel
		subgroup, dot bool
		want          Kernel
	}{
		{Ternary, false, false, Ternary},
		{Ternary, false, true, TernaryDot},
		{Ternary, true, false, TernarySubgroup},
		{Ternary, true, true, TernarySubgroupDot},
		{TernaryNorm, true, true, TernaryNormSubgroupDot},
		{NormQuant, true, true, NormQuantSubgroup},
		{HeadQ8, true, true, HeadQ8Dot},
		{Embed, true, true, Embed},
	} {
		if got := tc.k.Variant(tc.subgroup, tc.dot); got != tc.want {
			t.Errorf("%s.Variant(%v, %v) = %s, want %s", tc.k, tc.subgroup, tc.dot, got, tc.want)
		}
	}
}
