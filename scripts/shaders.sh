#!/usr/bin/env bash
# Compiles every shaders/*.comp to SPIR-V in the directory given (spirv/ for
# `make shaders`), plus the variants that use the integer dot product
# instruction, and validates each with spirv-val.
set -euo pipefail
out=${1:?usage: scripts/shaders.sh OUTDIR}
cd "$(dirname "$0")/../shaders"
mkdir -p "$out"
for tool in glslangValidator spirv-val; do
	command -v "$tool" >/dev/null || { echo "shaders: $tool is missing (apt-get install glslang-tools spirv-tools)" >&2; exit 1; }
done
# compile NAME SOURCE [DEFINE...]
compile() {
	local name=$1 src=$2
	shift 2
	glslangValidator -V --target-env vulkan1.1 "$@" -o "$out/$name.spv" "$src" >/dev/null ||
		{ glslangValidator -V --target-env vulkan1.1 "$@" -o "$out/$name.spv" "$src"; exit 1; }
	spirv-val --target-env vulkan1.1 "$out/$name.spv"
}
for src in *.comp; do
	compile "${src%.comp}" "$src"
done
# Kernels with an integer-dot-product twin (used when the device has it).
for name in ternary ternary_mm ternary_norm head_q8 head_blocks head_nibbles head_six int8_peak; do
	compile "${name}_dot" "$name.comp" -DDOT
done
# Attention with subgroup reductions (used when the device has subgroup
# arithmetic in compute shaders; a module declaring the capability may not
# even load on a device without it, hence a twin rather than a branch).
compile attention_subgroup attention.comp -DSUBGROUP
# The same for the reductions of the matrix products and the norms (integer
# sums and maxima: the same bits as the tree in any order).
for name in ternary ternary_norm; do
	compile "${name}_subgroup" "$name.comp" -DSUBGROUP
	compile "${name}_subgroup_dot" "$name.comp" -DSUBGROUP -DDOT
done
compile norm_quant_subgroup norm_quant.comp -DSUBGROUP
