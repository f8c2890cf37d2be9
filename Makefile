# bitvk: the two commands a new user needs are `make demo` and `make test`.

GO        ?= go
BIN       := bin/bitvk
DEMO_DIR  := build
FUZZTIME  ?= 60s
# How long `make test` runs each fuzz target: a short smoke run, not a hunt.
TEST_FUZZTIME ?= 10s

.PHONY: all build deps demo test fuzz clean

all: build

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/bitvk

# The main job on the built-in synthetic model: write a model shaped like
# BitNet b1.58 2B4T, inspect it (ternary statistics included), generate
# from it on the CPU, and time the CPU on the small shape.
demo: build
	@mkdir -p $(DEMO_DIR)
	$(BIN) synth --shape 2b -o $(DEMO_DIR)/synthetic-2b.gguf
	$(BIN) inspect --ternary $(DEMO_DIR)/synthetic-2b.gguf
	$(BIN) run -m $(DEMO_DIR)/synthetic-2b.gguf --tokens 128000,791,6864 -n 16 --seed 1
	$(BIN) bench --shape small

# vet, every test, a build without cgo, and a short fuzz run of every parser.
test: deps
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(TEST_FUZZTIME) ./gguf

# A longer fuzz run: make fuzz FUZZTIME=10m
fuzz: deps
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./gguf

clean:
	rm -rf bin $(DEMO_DIR)
