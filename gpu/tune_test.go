package gpu

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTuning(t *testing.T) {
	got, err := ParseTuning(" rows=8, lanes=32,norm=1024,chunk=64,prows=8,ptok=16,plane=128,vec=4,pvec=4,npass=1,layer=6 ")
	if want := (Tuning{Rows: 8, Lanes: 32, Norm: 1024, Chunk: 64, PrefillRows: 8, PrefillTokens: 16, PrefillLanes: 128, Vec: 4, PrefillVec: 4, NormPasses: 1, Layer: 6}); err != nil || got != want {
		t.Fatalf("ParseTuning: %+v, %v; want %+v", got, err, want)
	}
	if back, err := ParseTuning(got.String()); err != nil || back != got {
		t.Errorf("ParseTuning(%q) = %+v, %v", got.String(), back, err)
	}
	var all Tuning // every key, each its own value: String and ParseTuning agree on them all
	if n, want := len(all.fields()), reflect.TypeOf(all).NumField(); n != want {
		t.Fatalf("Tuning.fields lists %d keys; Tuning has %d fields", n, want)
	}
	for i, f := range all.fields() {
		*f.v = i + 1
	}
	if back, err := ParseTuning(all.String()); err != nil || back != all {
		t.Errorf("ParseTuning(%q) = %+v, %v; want %+v", all.String(), back, err, all)
	}
	if part := (Tuning{Vec: 4, TK: 64}); part.String() != "vec=4,tk=64" {
		t.Errorf("%+v.String() = %q, want the fields set only", part, part.String())
	}
	if got, err := ParseTuning(""); err != nil || got != (Tuning{}) {
		t.Errorf("ParseTuning(\"\") = %+v, %v; want the zero value", got, err)
	}
	for _, bad := range []string{"rows", "rows=x", "rows=0", "rows=-4", "width=4", "rows=4,"} {
		if _, err := ParseTuning(bad); err == nil {
			t.Errorf("ParseTuning(%q): no error", bad)
		}
	}
	// Zero fields take the defaults; each field's bounds are checked.
	d, err := resolveTuning(Tuning{Rows: 8}, 1024, 32768)
	if want := (Tuning{Rows: 8, Lanes: wgMat, Norm: wgNorm, Chunk: attnChunk, PrefillRows: rowsWG, PrefillTokens: tileT, PrefillLanes: wgMat, Vec: 1, PrefillVec: 1, NormPasses: 3, TK: attnTK, VUnroll: 1,
		Tiled: tiledTokens, TiledBlock: tiledRows, TiledRows: 8, TiledTokens: 4, TiledGroups: tiledGroups, Layer: 7, Warm: 1, Combine: 1, Preload: 1, AttnRows: attnMaxRows, TiledCoop: 1}); err != nil || d != want {
		t.Errorf("resolveTuning(rows=8) = %+v, %v; want %+v", d, err, want)
	}
	if d, err := resolveTuning(Tuning{Norm: 1024}, 256, 32768); err != nil || d.Norm != 256 {
		t.Errorf("norm=1024 on a device of 256 invocations: %+v, %v; want norm 256", d, err)
	}
	for _, tc := range []struct {
		t   Tuning
		msg string
	}{
		{Tuning{Rows: 3}, "rows=3"},
		{Tuning{Rows: 64}, "rows=64"},
		{Tuning{Lanes: 4}, "lanes=4"},
		{Tuning{Lanes: 512, Norm: 256}, "lanes=512"},
		{Tuning{Rows: 16, Lanes: 8}, "rows=16"},
		{Tuning{Rows: 32, Lanes: 512, Norm: 512}, "rows=32,lanes=512: at most 4096"},
		{Tuning{Norm: 2048}, "norm=2048"},
		{Tuning{Chunk: 40}, "chunk=40"},
		{Tuning{PrefillRows: 3}, "prows=3"},
		{Tuning{PrefillTokens: 64}, "ptok=64"},
		{Tuning{PrefillRows: 8, PrefillTokens: 16}, "at most plane (64)"},
		{Tuning{PrefillLanes: 8}, "plane=8"},
		{Tuning{PrefillLanes: 256}, "plane=256"},
		{Tuning{PrefillLanes: 48}, "plane=48"},
		{Tuning{PrefillRows: 8, PrefillTokens: 16, PrefillLanes: 128}, "at most 4096"},
		{Tuning{Vec: 2}, "vec=2"},
		{Tuning{PrefillVec: 8}, "pvec=8"},
		{Tuning{NormPasses: 2}, "npass=2"},
		{Tuning{TK: 8}, "tk=8"},
		{Tuning{TK: 48}, "tk=48"},
		{Tuning{TK: 64, Chunk: 32}, "chunk=32"},
		{Tuning{VUnroll: 2}, "vunroll=2"},
		{Tuning{Layer: 4}, "layer=4"},
		{Tuning{Warm: 3}, "warm=3"},
		{Tuning{Combine: 3}, "acomb=3"},
		{Tuning{Preload: 3}, "pre=3"},
		{Tuning{AttnRows: 12}, "arows=12"},
		{Tuning{TiledCoop: 3}, "mmc=3"},
		{Tuning{TiledCoop: 2, Tiled: 1}, "mm=1"},
		{Tuning{AttnRows: 128}, "arows=128"},
		{Tuning{Combine: 2}, "layer=5"},
		{Tuning{Tiled: 2}, "mm=2"},
		{Tuning{TiledGroups: 1<<16 + 1}, "mmg=65537"},
		{Tuning{Tiled: 48}, "mm=48"},
		{Tuning{Tiled: 512}, "mm=512"},
		{Tuning{Tiled: 64, TiledBlock: 2}, "mmm=2"},
		{Tuning{Tiled: 64, TiledBlock: 96}, "mmm=96"},
		{Tuning{Tiled: 64, TiledRows: 6}, "mmr=6"},
		{Tuning{Tiled: 64, TiledTokens: 16}, "mmt=16"},
		{Tuning{Tiled: 4, TiledTokens: 8}, "within the tile"},
		{Tuning{Tiled: 4, TiledBlock: 4, TiledRows: 4}, "a workgroup of 1 invocations"},
		{Tuning{Tiled: 256, TiledBlock: 1024}, "a workgroup of 8192 invocations"},
	} {
		if _, err := resolveTuning(tc.t, 1024, 32768); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("resolveTuning(%+v): %v, want an error naming %q", tc.t, err, tc.msg)
		}
	}
	if c := d.Changed(); c != (Tuning{Rows: 8}) || c.String() != "rows=8" {
		t.Errorf("%+v.Changed() = %+v (%q), want rows=8 alone", d, c, c.String())
	}
	if c := defaultTuning().Changed(); c != (Tuning{}) {
		t.Errorf("the defaults changed: %+v", c)
	}
	// What a device runs of ternary_mm: its workgroup and shared memory.
	tiled := func(s string) Tuning {
		t.Helper()
		tn, err := ParseTuning(s)
		if err == nil {
			tn, err = resolveTuning(tn, 1024, 32768)
		}
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return tn
	}
	for _, tc := range []struct {
		tune             string
		maxWG, maxShared uint32
		msg              string
	}{
		{"mm=64,mmm=64,mmr=4", 256, 16384, ""}, // 256 invocations, 16 KiB: every device's least
		{"mm=1,mmm=1024", 16, 0, ""},
		{"mm=64,mmm=128,mmr=4", 256, 32768, "512 invocations"},
		{"mm=64", 256, 16384, "24576 bytes"},
	} {
		err := tiled(tc.tune).checkTiled(tc.maxWG, tc.maxShared)
		if tc.msg == "" && err != nil || tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s on a device of %d invocations and %d bytes: %v, want %q", tc.tune, tc.maxWG, tc.maxShared, err, tc.msg)
		}
	}
	// The default tile on a device too small for it: prompts keep
	// ternary.comp's tiles; the same tile asked for is an error.
	if d, err := resolveTuning(Tuning{Rows: 8}, 128, 16384); err != nil || d.Tiled != 1 {
		t.Errorf("the default tile on a device of 128 invocations: %+v, %v; want mm=1", d, err)
	}
	if _, err := resolveTuning(Tuning{Tiled: tiledTokens}, 1024, 16384); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("mm=%d asked for on a device of 16 KiB: %v, want an error", tiledTokens, err)
	}
	t.Setenv(TuneEnv, "mm=64,mmm=256")
	if _, err := resolveTuning(Tuning{}, 1024, 32768); err == nil || !strings.Contains(err.Error(), TuneEnv) || !strings.Contains(err.Error(), "40960 bytes") {
		t.Errorf("%s=mm=64,mmm=256 on a device of 32 KiB: %v, want an error naming both", TuneEnv, err)
	}
	t.Setenv(TuneEnv, "rows=16,chunk=48")
	if d, err := resolveTuning(Tuning{}, 1024, 32768); err != nil || d.Rows != 16 || d.Chunk != 48 || d.Lanes != wgMat {
		t.Errorf("%s=rows=16,chunk=48: %+v, %v", TuneEnv, d, err)
	}
	t.Setenv(TuneEnv, "vec=3") // parsed, out of range
	if _, err := resolveTuning(Tuning{}, 1024, 32768); err == nil || !strings.Contains(err.Error(), TuneEnv) || !strings.Contains(err.Error(), "vec=3") {
		t.Errorf("%s=vec=3: %v, want an error naming both", TuneEnv, err)
	}
	t.Setenv(TuneEnv, "rows=five")
	if _, err := resolveTuning(Tuning{}, 1024, 32768); err == nil || !strings.Contains(err.Error(), TuneEnv) {
		t.Errorf("a bad %s: %v, want an error naming it", TuneEnv, err)
	}
}

// A pass of a few tokens takes them in one tile that fits its workgroup;
// more tokens, the tuning's tile.
func TestTokenTile(t *testing.T) {
	for _, tc := range []struct{ T, tile, rows, lanes, want int }{
		{1, 8, 4, 64, 1},
		{2, 8, 4, 64, 2},
		{3, 8, 4, 64, 4},
		{5, 8, 4, 64, 8},
		{9, 8, 4, 64, 16},
		{16, 8, 4, 64, 16},
		{17, 8, 4, 64, 8},
		{512, 8, 4, 64, 8},
		{9, 2, 1, 16, 16}, // rows·NT ≤ lanes
		{9, 4, 4, 16, 4},
		{9, 8, 4, 128, 8}, // rows·NT·lanes ≤ 4096
		{12, 8, 8, 32, 4},
	} {
		if got := tokenTile(tc.T, tc.tile, tc.rows, tc.lanes); got != tc.want {
			t.Errorf("tokenTile(T %d, tile %d, rows %d, lanes %d) = %d, want %d", tc.T, tc.tile, tc.rows, tc.lanes, got, tc.want)
		}
	}
}

// ternary_mm's tile shrinks, rows first, until a product makes TiledGroups
// workgroups, and never below 32 rows or 4·TiledTokens tokens.
func TestTiledTile(t *testing.T) {
	d := defaultTuning()
	for _, tc := range []struct {
		tune       Tuning
		rows, T    int
		shrink     bool
		bm, bn, wg int
	}{
		{d, 13824, 512, true, 128, 64, 256}, // 108 × 8 tiles: enough
		{d, 2560, 512, true, 64, 64, 128},   // 20 × 8 → 40 × 8
		{d, 2560, 128, true, 32, 32, 32},    // 20 × 2 → … → 80 × 4
		{d, 2560, 128, false, 128, 64, 256}, // kept whole
		{d, 100, 40, true, 32, 16, 16},      // as small as it goes: 4 × 3
		{Tuning{Tiled: 64, TiledBlock: 128, TiledRows: 8, TiledTokens: 8, TiledGroups: 1}, 2560, 128, true, 128, 64, 128},
	} {
		bm, bn, wg := tc.tune.tiledTile(tc.rows, tc.T, tc.shrink)
		if bm != tc.bm || bn != tc.bn || wg != tc.wg {
			t.Errorf("%s: %d rows × %d tokens (shrink %v): tile %d × %d in %d invocations, want %d × %d in %d",
				tc.tune, tc.rows, tc.T, tc.shrink, bm, bn, wg, tc.bm, tc.bn, tc.wg)
		}
	}
}
