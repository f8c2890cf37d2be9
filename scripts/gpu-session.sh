#!/usr/bin/env bash
# The Vulkan checks and measurements of a session on a real GPU (issue 16),
# for a GPU machine that may have no Go toolchain: build here, run there.
#
#   scripts/gpu-session.sh build
#       (with Go) bin/bitvk and the test binaries bin/gpu.test and
#       bin/vk.test, stripped: about 30 MB to carry to the GPU machine.
#   scripts/gpu-session.sh tests OUTDIR
#       (on the GPU machine, from the repository root) bitvk devices, then
#       every test of gpu/vk and gpu in a process of its own (so that one
#       crash stops no other; the gpu package now makes one VkInstance per
#       process, since NVIDIA's driver refuses vkCreateInstance after about
#       14), with BITVK_REQUIRE_VULKAN=1 so that nothing skips; a line
#       per test in OUTDIR/tests.txt, the failures' output beside it.
#   scripts/gpu-session.sh bench OUTDIR
#       (on the GPU machine) the synthetic 2B model, bitvk check on the small
#       shape (validation layer on) and on the 2B model, then bitvk bench
#       with --profile and --fuse on,off (the decode step with and without
#       the fused norms, RoPE and K/V write), decode at a depth of 4,032
#       tokens against none (bench -d), and the sample kernel in
#       chunks against one workgroup (BenchmarkSampleKernel, when
#       bin/gpu.test is there); OUTDIR gets each command's output.
#   scripts/gpu-session.sh sweep OUTDIR
#       (on the GPU machine) the 2B model's pp512 and tg64 (float16 head,
#       profiled), at no depth and at 3,520 tokens, under each kernel shape
#       of TUNES (BITVK_VK_TUNE values, space-separated; "default" for
#       none), each in a process of its own, the tok/s lines gathered in
#       OUTDIR/sweep.txt: one run picks the shapes (gpu.Tuning) worth
#       making the defaults. The default list: 16-byte loads in the ternary
#       products (vec, pvec), norms reading their values once (npass=1),
#       attention staging 64 keys (tk) and loading four value rows at once
#       (vunroll), the down projection normalizing its own input (layer=6)
#       and the output projection combining attention's partials too
#       (layer=5), alone and together, and each layer's weights read into
#       the L2 cache while its attention runs (warm=2), and attention's
#       chunks combined by their last workgroup (acomb=2, with layer=5;
#       with chunks of 64 positions too), and the products' first weights
#       loaded before their prologue's norm (pre=2). Before them (a short lease cuts the
#       end), the prompt alone (pp128, pp512 and pp2048) under each shape of
#       PTUNES: ternary_mm's tiles (mm, mmm, mmr, mmt; mmg=1 keeps them whole,
#       mmg=1024 shrinks them towards more workgroups than the default),
#       ternary.comp's (mm=1), ternary_mm on tensor cores (mmc=2,
#       cooperative matrices), and attention's workgroups of 16 and 32
#       query rows (arows), whose tok/s lines go to
#       OUTDIR/sweep.txt too.
#   scripts/gpu-session.sh draft OUTDIR
#       (on the GPU machine) speculative decoding on the GPU (issue 12):
#       what a verification pass of 1 + k tokens costs against one token
#       (bench --verify) on the built-in nano-kjv and the 2B shape, then
#       greedy decoding of nano-kjv with and without drafting on each
#       workload of scripts/draft-bench (bench --draft), its tokens checked
#       against plain decoding's ("same as off").
#   scripts/gpu-session.sh tune OUTDIR
#       (on the GPU machine) bitvk tune on the synthetic 2B model with the
#       float16 and the int8 head (--no-save): every decode shape, then
#       the prompt shapes on the fastest, each against the defaults, and
#       the choice (about two minutes a head on an H100-class GPU; a
#       second call after all).
#   scripts/gpu-session.sh all OUTDIR
#       (on the GPU machine) one call for a short lease: the gpu package's
#       conformance, fusion, attention and warm tests (TESTS to choose
#       others), then tune with the float16 head (every shape at two
#       depths, the choice), draft, and a short sweep (profiles of the
#       defaults and of every candidate shape at once, at no depth and at
#       3,520 tokens), each under a time limit (under 10 minutes in all),
#       into OUTDIR/tests, OUTDIR/tune, OUTDIR/draft and OUTDIR/sweep.
#
# Environment: TESTS, a regular expression, limits the tests run (default:
# all); PKGS, the test packages (default "vk gpu": two runs with PKGS=vk
# and PKGS=gpu into two OUTDIRs go at once); SHAPE_2B=0 skips the 2B model
# (check and bench on the small shape only). Where the Vulkan loader is
# missing, install libvulkan1 first (the tests also need
# vulkan-validationlayers and glslang-tools; NVIDIA's ICD, inside
# libGLX_nvidia.so.0, needs libglvnd0, libglx0 and libegl1); where
# the driver is not found, name its ICD file in VK_DRIVER_FILES (the script
# looks in the usual places, and in the NVIDIA container toolkit's).
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."

icd() {
	[ -n "${VK_DRIVER_FILES:-}" ] && return
	for f in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
		/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
		if [ -e "$f" ]; then
			export VK_DRIVER_FILES=$f
			return
		fi
	done
}

need() {
	for f in "$@"; do
		[ -x "$f" ] || { echo "gpu-session: $f is missing: run 'scripts/gpu-session.sh build' where Go is" >&2; exit 1; }
	done
}

case "${1:-}" in
build)
	mkdir -p bin
	go build -ldflags='-s -w' -o bin/bitvk ./cmd/bitvk
	go test -c -ldflags='-s -w' -o bin/gpu.test ./gpu
	go test -c -ldflags='-s -w' -o bin/vk.test ./gpu/vk
	ls -l bin/bitvk bin/gpu.test bin/vk.test
	;;
tests)
	out=${2:?usage: scripts/gpu-session.sh tests OUTDIR}
	need bin/bitvk bin/gpu.test bin/vk.test
	mkdir -p "$out"
	icd
	bin/bitvk devices >"$out/devices.txt" 2>&1 || true
	: >"$out/tests.txt"
	fails=0
	for pkg in ${PKGS:-vk gpu}; do
		bin=$PWD/bin/$pkg.test
		dir=gpu
		[ "$pkg" = vk ] && dir=gpu/vk
		for t in $("$bin" -test.list "${TESTS:-.}" | grep '^Test'); do
			start=$(date +%s)
			log=$out/$pkg.$t.log
			if (cd "$dir" && BITVK_REQUIRE_VULKAN=1 "$bin" -test.run "^$t\$" -test.count=1 -test.v -test.timeout 600s >"$log" 2>&1); then
				if grep -q -- '--- SKIP' "$log"; then # a device without what the test needs: why, kept
					echo "skip $pkg $t $(($(date +%s) - start))s: $(grep -m1 -B1 -- '--- SKIP' "$log" | head -n1 | sed 's/^ *//')" >>"$out/tests.txt"
				else
					echo "ok   $pkg $t $(($(date +%s) - start))s" >>"$out/tests.txt"
					rm "$log"
				fi
			else
				echo "FAIL $pkg $t $(($(date +%s) - start))s (see $pkg.$t.log)" >>"$out/tests.txt"
				fails=$((fails + 1))
			fi
		done
	done
	cat "$out/tests.txt"
	echo "gpu-session: $fails failing"
	[ "$fails" = 0 ]
	;;
bench)
	out=${2:?usage: scripts/gpu-session.sh bench OUTDIR}
	need bin/bitvk
	mkdir -p "$out"
	icd
	bin/bitvk devices >"$out/devices.txt" 2>&1
	status=0
	bin/bitvk check --shape small --validate >"$out/check-small.txt" 2>&1 || status=1
	model=(--shape small)
	if [ "${SHAPE_2B:-1}" != 0 ]; then
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
		bin/bitvk synth --shape 2b -o "$tmp/2b.gguf" >/dev/null
		model=(-m "$tmp/2b.gguf")
		bin/bitvk check -m "$tmp/2b.gguf" -n 32 >"$out/check-2b.txt" 2>&1 || status=1
	fi
	bin/bitvk bench "${model[@]}" --backend vulkan -p 128,512 -n 64 --head f16,q8 -r 3 --fuse on,off --profile \
		>"$out/bench.txt" 2>&1 || status=1
	depth=4032
	[ "${SHAPE_2B:-1}" != 0 ] || depth=1984
	bin/bitvk bench "${model[@]}" --backend vulkan -p 0 -n 64 -d 0,$depth --head f16,q8 -r 3 \
		>"$out/bench-depth.txt" 2>&1 || status=1
	# The heads converted at load, Q4_0 in its 4.5 bits (head_nibbles).
	bin/bitvk bench "${model[@]}" --backend vulkan -p 0 -n 64 --head q8_0,q6_k,q4_0 -r 3 \
		>"$out/bench-heads.txt" 2>&1 || status=1
	if [ -x bin/gpu.test ]; then
		(cd gpu && ../bin/gpu.test -test.run '^$' -test.bench SampleKernel -test.benchtime 200x) \
			>"$out/sample-kernel.txt" 2>&1 || status=1
	fi
	grep -h -E 'PASS|FAIL|tg|pp|int8 peak|Benchmark' "$out"/check-*.txt "$out/bench.txt" "$out/bench-depth.txt" "$out"/sample-kernel.txt 2>/dev/null || true
	exit $status
	;;
sweep)
	out=${2:?usage: scripts/gpu-session.sh sweep OUTDIR}
	need bin/bitvk
	mkdir -p "$out"
	icd
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	bin/bitvk synth --shape 2b -o "$tmp/2b.gguf" >/dev/null
	: >"$out/sweep.txt"
	status=0
	all=vec=4,npass=1,tk=64,vunroll=4,layer=5
	for tune in ${PTUNES:-default mmc=2 mm=1 arows=16 chunk=128,arows=32 mmg=1 mmg=1024 mm=64,mmm=64,mmr=4,mmg=1 mm=64,mmm=128,mmr=8,mmt=8,mmg=1 mm=128,mmm=128,mmr=8,mmt=8,mmg=1 mm=32,mmm=256,mmr=8,mmt=4,mmg=1}; do
		name=prompt-${tune//[=,]/-}
		[ "$tune" = default ] && tune=
		BITVK_VK_TUNE=$tune bin/bitvk bench -m "$tmp/2b.gguf" --backend vulkan -p 128,512,2048 -n 0 -r 2 \
			>"$out/sweep-$name.txt" 2>&1 || status=1
		grep -E '^ .* pp[0-9]+ ' "$out/sweep-$name.txt" | sed "s/^/${name}: /" >>"$out/sweep.txt" || echo "$name: failed" >>"$out/sweep.txt"
	done
	for tune in ${TUNES:-default warm=2 pre=2 vec=4 npass=1 tk=64 vunroll=4 layer=6 layer=5 $all $all,pre=2 $all,acomb=2 $all,acomb=2,chunk=64 $all,acomb=2,warm=2 $all,warm=2 $all,norm=512 $all,norm=1024 $all,lanes=32}; do
		name=${tune//[=,]/-}
		[ "$tune" = default ] && tune=
		BITVK_VK_TUNE=$tune bin/bitvk bench -m "$tmp/2b.gguf" --backend vulkan -p 512 -n 64 -d 0,3520 --head f16 -r 2 --profile \
			>"$out/sweep-$name.txt" 2>&1 || status=1
		grep -E '^ .* (pp512|tg64)( @ d[0-9]+)? ' "$out/sweep-$name.txt" | sed "s/^/${name}: /" >>"$out/sweep.txt" || echo "$name: failed" >>"$out/sweep.txt"
	done
	cat "$out/sweep.txt"
	exit $status
	;;
draft)
	out=${2:?usage: scripts/gpu-session.sh draft OUTDIR}
	need bin/bitvk
	mkdir -p "$out"
	icd
	status=0
	bin/bitvk bench --backend vulkan -m models/nano-kjv.gguf --verify --profile --draft-max 8 -r 10 >"$out/verify-nano.txt" 2>&1 || status=1
	bin/bitvk bench --backend vulkan --shape 2b --verify --profile --draft-max 8 -r 5 >"$out/verify-2b.txt" 2>&1 || status=1
	for w in quote edit code free; do
		bin/bitvk bench --backend vulkan --draft off,lookup,chains,auto --prompt-file "scripts/draft-bench/$w.txt" -n 128 -r 5 \
			>"$out/draft-$w.txt" 2>&1 || status=1
	done
	grep -H -E '^ +Vulkan|^profile of' "$out"/verify-*.txt
	tail -n 10 "$out"/draft-*.txt
	exit $status
	;;
tune)
	out=${2:?usage: scripts/gpu-session.sh tune OUTDIR}
	need bin/bitvk
	mkdir -p "$out"
	icd
	status=0
	for head in ${HEADS:-f16 q8}; do
		bin/bitvk tune --shape 2b --head $head --no-save >"$out/tune-$head.txt" 2>"$out/tune-$head.err" || status=1
		cat "$out/tune-$head.txt"
	done
	exit $status
	;;
all)
	out=${2:?usage: scripts/gpu-session.sh all OUTDIR}
	all_guess=vec=4,pvec=4,npass=1,tk=64,vunroll=4,layer=5,acomb=2,chunk=64,warm=2,pre=2
	mkdir -p "$out"
	status=0
	PKGS=gpu TESTS=${TESTS:-'Conformance|Fused|Combined|KernelKey|Attention|Tuning|Tiled|Warm'} timeout 150 bash "$self" tests "$out/tests" >"$out/tests.txt" 2>&1 || status=1
	HEADS=f16 timeout 170 bash "$self" tune "$out/tune" >"$out/tune.txt" 2>&1 || status=1
	timeout 100 bash "$self" draft "$out/draft" >"$out/draft.txt" 2>&1 || status=1
	PTUNES=${PTUNES:-'default mmc=2 mm=1'} TUNES=${TUNES:-"default $all_guess"} timeout 150 bash "$self" sweep "$out/sweep" >"$out/sweep.txt" 2>&1 || status=1
	tail -n 3 "$out/tests.txt"
	cat "$out/tune.txt"
	cat "$out/sweep/sweep.txt" 2>/dev/null
	grep -h -E 'Vulkan|lookup|chains|auto|off' "$out"/draft/*.txt 2>/dev/null | head -n 60
	exit $status
	;;
*)
	echo "usage: scripts/gpu-session.sh build | tests OUTDIR | bench OUTDIR | sweep OUTDIR | draft OUTDIR | tune OUTDIR | all OUTDIR" >&2
	exit 2
	;;
esac
