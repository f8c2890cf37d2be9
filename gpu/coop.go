package gpu

import (
	"fmt"

	"github.com/bitvk/bitvk/gpu/vk"
)

// The cooperative-matrix products (Tuning.TiledCoop, ternary_mm_coop.comp):
// workgroups of coopWG invocations (four subgroups of 32), tiles of
// coopTile rows × coopTile tokens.
const (
	coopWG   = 128
	coopTile = 64
)

// coopReady reports whether the device runs ternary_mm_coop: the
// cooperative matrix feature enabled, subgroups of 32, and s8 × s8 + s32
// products in 16 × 8 × 32 shapes a subgroup.
func coopReady(enabled bool, info vk.DeviceInfo) error {
	if !enabled {
		return fmt.Errorf("%s has no VK_NV_cooperative_matrix", info.Name)
	}
	if info.SubgroupSize != 32 {
		return fmt.Errorf("%s runs subgroups of %d, ternary_mm_coop's of 32", info.Name, info.SubgroupSize)
	}
	for _, s := range info.CoopMat {
		if s.M == 16 && s.N == 8 && s.K == 32 && s.A == "s8" && s.B == "s8" && s.C == "s32" && s.D == "s32" && s.Scope == "subgroup" {
			return nil
		}
	}
	return fmt.Errorf("%s lists no s8×s8+s32→s32 16×8×32 cooperative matrix in subgroups", info.Name)
}
