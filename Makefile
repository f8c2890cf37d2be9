# bitvk: the two commands a new user needs are `make demo` and `make test`.

GO        ?= go
BIN       := bin/bitvk
DEMO_DIR  := build
# `make fuzz` runs each fuzz target this long: an execution count, not a
# duration (see below); FUZZTIME=10m works too, with that caveat.
FUZZTIME  ?= 2000000x
# How much `make test` fuzzes each target: a short smoke run, not a hunt.
# make test fuzzes by execution count, not time: with a duration, Go 1.26's
# fuzz coordinator can race its own deadline and fail a target that found
# nothing ("context deadline exceeded", go.dev/issue/75804, fixed in 1.27).
TEST_FUZZ_GGUF      ?= 400000x
TEST_FUZZ_TOKENIZER ?= 50000x
TEST_FUZZ_SERVER    ?= 20000x
TEST_FUZZ_OTHER     ?= 50000x

# Every fuzz target: package and name.
FUZZ_TARGETS := ./gguf:FuzzParse ./gguf:FuzzBlockQuantizers ./tokenizer:FuzzEncode ./server:FuzzRequests \
	./nn/spec:FuzzReadCHNB ./nn:FuzzKLBaseReader ./convert:FuzzSafetensors ./hub:FuzzParseRef

.PHONY: all build install deps demo test fuzz generated shaders corpus model model-float clean

all: build

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/bitvk

# Installs bitvk where `go install` puts it ($GOBIN, else the first
# $(go env GOPATH)/bin), or in $(PREFIX)/bin: make install PREFIX=/usr/local.
# It needs Go and a C compiler only: the Vulkan headers the cgo shim compiles
# against are in third_party/, and the Vulkan loader is opened at run time.
PREFIX ?=
INSTALL_BIN = $(if $(PREFIX),$(abspath $(PREFIX))/bin,$(or $(shell $(GO) env GOBIN),$(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin))
install:
	GOBIN="$(INSTALL_BIN)" $(GO) install ./cmd/bitvk
	@echo "installed $(INSTALL_BIN)/bitvk; shell completion: bitvk completion -h"

# The main job. First the built-in trained model, nano-kjv (embedded in
# the binary, so no -m): greedy text from a prompt on the CPU and on
# Vulkan, its perplexity on the validation books (Ruth, Jonah, Jude) and
# bitvk check comparing the two backends on it. Then the synthetic model
# shaped like BitNet b1.58 2B4T: its ternary statistics, generation, the
# Vulkan devices, both backends timed on the small shape, and check.
demo: build corpus
	@mkdir -p $(DEMO_DIR)
	$(BIN) run -p "And it came to pass" -n 48 --temp 0 --backend cpu
	$(BIN) run -p "And it came to pass" -n 48 --temp 0 --backend vulkan
	$(BIN) perplexity -f $(DEMO_DIR)/corpus/kjv-valid.txt -c 256 --backend cpu
	$(BIN) check -p "And it came to pass" -n 32
	$(BIN) synth --shape 2b -o $(DEMO_DIR)/synthetic-2b.gguf
	$(BIN) inspect --ternary $(DEMO_DIR)/synthetic-2b.gguf
	$(BIN) run -m $(DEMO_DIR)/synthetic-2b.gguf --tokens 128000,791,6864 -n 16 --seed 1
	$(BIN) devices
	$(BIN) bench --shape small --backend cpu,vulkan -r 2
	$(BIN) check --shape small

# vet, every test (the CPU backend also in its pure-Go build; the Vulkan
# backend on lavapipe with the validation layer; the web page in Chromium),
# a build without cgo, the generated assembly and SPIR-V checked against
# their sources, and a short fuzz run of every parser. Among the tests,
# cmd/bitvk's TestInstallWithoutSystemVulkanHeaders runs `go install
# ./cmd/bitvk` with every system vulkan/ header hidden from the C compiler
# and checks that all Vulkan headers came from third_party/. The BITVK_REQUIRE_*
# variables turn "no Vulkan device" and "no browser" from skips into failures.
test: deps generated
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./...
	BITVK_REQUIRE_VULKAN=1 BITVK_REQUIRE_BROWSER=1 $(GO) test -count=1 ./...
	$(GO) test -count=1 -tags purego ./cpu
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(TEST_FUZZ_GGUF) ./gguf
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime $(TEST_FUZZ_TOKENIZER) ./tokenizer
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzRequests$$' -fuzztime $(TEST_FUZZ_SERVER) ./server
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzBlockQuantizers$$' -fuzztime $(TEST_FUZZ_OTHER) ./gguf
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzReadCHNB$$' -fuzztime $(TEST_FUZZ_OTHER) ./nn/spec
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzKLBaseReader$$' -fuzztime $(TEST_FUZZ_OTHER) ./nn
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzSafetensors$$' -fuzztime $(TEST_FUZZ_OTHER) ./convert
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzParseRef$$' -fuzztime $(TEST_FUZZ_OTHER) ./hub

# The checked-in assembly and SPIR-V must be what their sources generate now.
generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	(cd tools/asmgen && $(GO) run . -out "$$tmp/kernels_amd64.s" -stubs "$$tmp/kernels_stubs_amd64.go" -pkg cpu) && \
	sed -e 's|'"$$tmp"'|../../cpu|g' "$$tmp/kernels_amd64.s" | cmp -s - cpu/kernels_amd64.s && \
	sed -e 's|'"$$tmp"'|../../cpu|g' "$$tmp/kernels_stubs_amd64.go" | cmp -s - cpu/kernels_stubs_amd64.go || \
	{ echo "cpu/kernels_amd64.s is not what tools/asmgen generates: run 'go generate ./cpu'"; exit 1; }
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && scripts/shaders.sh "$$tmp" && \
	for f in "$$tmp"/*.spv spirv/*.spv; do \
		n=$$(basename "$$f"); cmp -s "$$tmp/$$n" "spirv/$$n" || \
		{ echo "spirv/$$n is not what shaders/ compiles to: run 'make shaders'"; exit 1; }; \
	done

# The SPIR-V kernels, compiled from shaders/ by glslang and validated.
shaders:
	scripts/shaders.sh "$(CURDIR)/spirv"

# The training text: the King James Bible, one verse per line, with Ruth,
# Jonah and Jude held out as validation text (scripts/corpus.sh says more).
corpus: deps
	scripts/corpus.sh $(DEMO_DIR)/corpus

# The demo model, nano-kjv, trained with bitvk's own commands: a 4096-token
# BPE vocabulary, then quantization-aware training of a 6-layer ternary
# model on the training books, its validation perplexity on Ruth, Jonah
# and Jude, and its sha256. The same recipe gives the same bytes on any
# thread count (models/nano-kjv.md has the machine and time). An
# interrupted run resumes from its checkpoint. `make model-float` trains
# the same shape without quantization on the same tokens, for comparison.
MODEL_DIR   := $(DEMO_DIR)/model
CORPUS      := $(DEMO_DIR)/corpus
MODEL_SHAPE := --layers 6 --embd 512 --ffn 1280 --heads 8 --kv-heads 4 --ctx 256
MODEL_TRAIN := -f $(CORPUS)/kjv-train.txt --valid $(CORPUS)/kjv-valid.txt --vocab $(MODEL_DIR)/vocab.gguf \
	$(MODEL_SHAPE) --batch 8 --lr 2e-3 --warmup 100 --steps 1000 --seed 1 --eval-every 100 --checkpoint-every 50
resume = $(if $(wildcard $(1)/checkpoint.bin),--resume)

$(MODEL_DIR)/vocab.gguf: build corpus
	@mkdir -p $(MODEL_DIR)
	$(BIN) tokenizer-train -f $(CORPUS)/kjv-train.txt --vocab 4096 -o $@

model model-float: SHELL := /bin/bash
model: build corpus $(MODEL_DIR)/vocab.gguf
	set -o pipefail; $(BIN) train $(MODEL_TRAIN) --name nano-kjv --out $(MODEL_DIR)/nano-kjv.gguf --checkpoint $(MODEL_DIR)/nano-kjv.ckpt \
		$(call resume,$(MODEL_DIR)/nano-kjv.ckpt) 2>&1 | tee $(MODEL_DIR)/nano-kjv.log
	$(BIN) perplexity -m $(MODEL_DIR)/nano-kjv.gguf -f $(CORPUS)/kjv-valid.txt -c 256 --backend cpu 2>/dev/null | tail -1 | tee -a $(MODEL_DIR)/nano-kjv.log
	sha256sum $(MODEL_DIR)/nano-kjv.gguf | tee -a $(MODEL_DIR)/nano-kjv.log

model-float: build corpus $(MODEL_DIR)/vocab.gguf
	set -o pipefail; $(BIN) train $(MODEL_TRAIN) --float --checkpoint $(MODEL_DIR)/float.ckpt \
		$(call resume,$(MODEL_DIR)/float.ckpt) 2>&1 | tee $(MODEL_DIR)/float.log

# A longer run of every fuzz target in turn: make fuzz FUZZTIME=20000000x
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in $${t%%:*} ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) "$${t%%:*}" || exit 1; \
	done

clean:
	rm -rf bin $(DEMO_DIR)
