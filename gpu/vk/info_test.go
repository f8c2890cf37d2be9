package vk

import (
	"slices"
	"testing"
)

func TestPick(t *testing.T) {
	dev := func(types ...string) []DeviceInfo {
		var ds []DeviceInfo
		for i, ty := range types {
			ds = append(ds, DeviceInfo{Index: i, Type: ty})
		}
		return ds
	}
	for _, tc := range []struct {
		devs []DeviceInfo
		want int
	}{
		{nil, -1},
		{dev("cpu"), 0},
		{dev("other"), 0},
		{dev("cpu", "integrated"), 1},
		{dev("cpu", "integrated", "discrete"), 2},
		{dev("discrete", "discrete"), 0},
		{dev("other", "virtual", "cpu"), 1},
		{dev("cpu", "other"), 0},
		{dev("integrated", "virtual", "integrated"), 0},
		{dev("other", "mystery", "cpu"), 2},
	} {
		if got := Pick(tc.devs); got != tc.want {
			var types []string
			for _, d := range tc.devs {
				types = append(types, d.Type)
			}
			t.Errorf("Pick(%v) = %d, want %d", types, got, tc.want)
		}
	}
}

func TestFeatureNames(t *testing.T) {
	if n := (Features{}).Names(); len(n) != 0 {
		t.Errorf("Names of no features = %v", n)
	}
	got := Features{Int8: true, IntegerDot: true, CooperativeMatrix: true}.Names()
	if want := []string{"int8", "integer_dot", "cooperative_matrix"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestVersionStrings(t *testing.T) {
	for _, tc := range []struct {
		vendor, v uint32
		want      string
	}{
		{0x10005, 1<<22 | 3<<12 | 230, "1.3.230"},
		{0x1002, 2<<22 | 0<<12 | 279, "2.0.279"},
		{0x10de, 550<<22 | 54<<14 | 14<<6, "550.54.14.0"},
	} {
		if got := driverVersionString(tc.vendor, tc.v); got != tc.want {
			t.Errorf("driverVersionString(%#x, %#x) = %q, want %q", tc.vendor, tc.v, got, tc.want)
		}
	}
	if got := apiVersionString(1<<22 | 1<<12); got != "1.1.0" {
		t.Errorf("apiVersionString = %q", got)
	}
}

func TestHelpers(t *testing.T) {
	if got := subgroupOps(0b1000_0101); !slices.Equal(got, []string{"basic", "arithmetic", "quad"}) {
		t.Errorf("subgroupOps = %v", got)
	}
	for _, tc := range []struct {
		flags []uint32
		want  int
	}{
		{nil, -1},
		{[]uint32{1}, -1},         // graphics only
		{[]uint32{7, 6}, 1},       // prefer compute without graphics
		{[]uint32{4, 7}, 1},       // transfer only, then graphics+compute
		{[]uint32{3, 7, 2, 2}, 2}, // the first compute-only family
		{[]uint32{7, 3, 5}, 0},    // all with graphics: the first
	} {
		if got := pickQueueFamily(tc.flags); got != tc.want {
			t.Errorf("pickQueueFamily(%v) = %d, want %d", tc.flags, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{512, "512 B"}, {32 << 20, "32 MiB"}, {3 << 29, "1.5 GiB"}, {1536, "1.5 KiB"},
	} {
		if got := formatSize(tc.n); got != tc.want {
			t.Errorf("formatSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// Cooperative matrix shapes print as bitvk devices shows them, unknown
// component types and scopes by number.
func TestCoopMatShape(t *testing.T) {
	s := CoopMatShape{M: 16, N: 8, K: 32, A: componentTypeName(3), B: componentTypeName(3), C: componentTypeName(5), D: componentTypeName(5), Scope: scopeName(3)}
	if got, want := s.String(), "s8×s8+s32→s32 16×8×32 (subgroup)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if componentTypeName(0) != "f16" || componentTypeName(7) != "u8" || componentTypeName(99) != "type99" || scopeName(4) != "scope4" || scopeName(2) != "workgroup" {
		t.Error("component type or scope names")
	}
}
