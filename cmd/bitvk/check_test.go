package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/nn"
)

// needVulkan skips a test without a Vulkan device, unless
// BITVK_REQUIRE_VULKAN=1 (as in `make test`), where it fails.
func needVulkan(t *testing.T) {
	t.Helper()
	if _, err := gpu.Devices(); err != nil {
		if os.Getenv("BITVK_REQUIRE_VULKAN") == "1" {
			t.Fatalf("no Vulkan device (BITVK_REQUIRE_VULKAN=1): %v", err)
		}
		t.Skipf("no Vulkan device: %v", err)
	}
}

// check passes on the synthetic models with the validation layer on, and
// the greedy streams of 64 tokens agree (up to a near tie of the CPU's
// logits, which the output then names).
func TestCheckPasses(t *testing.T) {
	needVulkan(t)
	for _, shape := range []string{"tiny", "small"} {
		code, out, errOut := bitvk("check", "--shape", shape, "-n", "64", "--validate")
		if code != 0 {
			t.Fatalf("check --shape %s: exit %d\n%s\n%s", shape, code, out, errOut)
		}
		for _, want := range []string{"hidden state after each block", "logits per position", "greedy stream of 64 tokens", "PASS"} {
			if !strings.Contains(out, want) {
				t.Errorf("check --shape %s: output lacks %q:\n%s", shape, want, out)
			}
		}
		if strings.Contains(out, "FAIL") {
			t.Errorf("check --shape %s reports a failure:\n%s", shape, out)
		}
	}
}

// --kernels picks the CPU kernel set the GPU is compared with: the plain
// Go twins pass too, and the report names them; a set the CPU lacks is a
// usage error, on check as on run.
func TestCheckKernels(t *testing.T) {
	needVulkan(t)
	code, out, errOut := bitvk("check", "--shape", "tiny", "-n", "16", "--kernels", "generic")
	if code != 0 || !strings.Contains(out, "cpu (generic,") || !strings.Contains(out, "PASS") {
		t.Fatalf("check --kernels generic: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, cmd := range []string{"check", "run"} {
		if code, _, errOut := bitvk(cmd, "--shape", "tiny", "--tokens", "1", "-n", "1", "--kernels", "avx9"); code != 2 || !strings.Contains(errOut, `"avx9" is not a kernel set`) {
			t.Errorf("%s --kernels avx9: exit %d: %s", cmd, code, errOut)
		}
	}
	code, _, errOut = bitvk("run", "--shape", "tiny", "--backend", "cpu", "--tokens", "1,2", "-n", "2", "--kernels", "go")
	if code != 0 || !strings.Contains(errOut, "cpu (go,") {
		t.Errorf("run --kernels go: exit %d: %s", code, errOut)
	}
}

// A tolerance nothing meets makes check fail, naming the first layer and
// block that passed it.
func TestCheckFailsNamingTheLayer(t *testing.T) {
	needVulkan(t)
	code, out, errOut := bitvk("check", "--shape", "tiny", "-n", "4", "--max-rel", "-1")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(errOut, "layer 0, attention block") || !strings.Contains(out, "FAIL") {
		t.Errorf("the failure does not name layer 0's attention block:\n%s\n%s", out, errOut)
	}
}

// logits on the Vulkan backend agree with the CPU backend's.
func TestLogitsVulkanAgreesWithCPU(t *testing.T) {
	needVulkan(t)
	model := synthTiny(t)
	read := func(backend string) [][]float32 {
		code, out, errOut := bitvk("logits", "-m", model, "--backend", backend, "--tokens", "1,5,9,200,17,3,3,80", "--top", "0")
		if code != 0 {
			t.Fatalf("logits --backend %s: exit %d: %s", backend, code, errOut)
		}
		var rows [][]float32
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var line struct {
				Top [][2]float64 `json:"top"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			row := make([]float32, len(line.Top))
			for _, p := range line.Top {
				row[int(p[0])] = float32(p[1])
			}
			rows = append(rows, row)
		}
		return rows
	}
	cpuRows, gpuRows := read("cpu"), read("vulkan")
	if len(cpuRows) != 8 || len(gpuRows) != 8 {
		t.Fatalf("%d and %d positions, want 8", len(cpuRows), len(gpuRows))
	}
	for p := range cpuRows {
		if c := nn.Correlation(cpuRows[p], gpuRows[p]); c < 0.999 {
			t.Errorf("position %d: correlation %.6f", p, c)
		}
		cb, margin := nn.Top2(cpuRows[p])
		if gb, _ := nn.Top2(gpuRows[p]); margin >= 1 && gb != cb {
			t.Errorf("position %d: top-1 %d on Vulkan, %d on the CPU (margin %.3f)", p, gb, cb, margin)
		}
	}
}

func TestDevices(t *testing.T) {
	needVulkan(t)
	code, out, errOut := bitvk("devices")
	if code != 0 || !strings.Contains(out, "device 0:") || !strings.Contains(out, "maxStorageBufferRange") {
		t.Fatalf("devices: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = bitvk("devices", "--json")
	var devs []deviceJSON
	if err := json.Unmarshal([]byte(out), &devs); code != 0 || err != nil || len(devs) == 0 {
		t.Fatalf("devices --json: exit %d, %v\n%s", code, err, out)
	}
	if devs[0].MaxStorageBufferRange == 0 || devs[0].Name == "" || devs[0].APIVersion == "" {
		t.Errorf("incomplete device: %+v", devs[0])
	}
}

// --backend vulkan runs a generation; auto says what it chose.
func TestRunVulkan(t *testing.T) {
	needVulkan(t)
	code, out, errOut := bitvk("run", "--shape", "tiny", "--backend", "vulkan", "--tokens", "1,2,3", "-n", "8", "--seed", "1")
	if code != 0 || len(strings.Split(strings.TrimSpace(out), ",")) != 8 {
		t.Fatalf("run --backend vulkan: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "vulkan") {
		t.Errorf("the summary does not name the Vulkan backend:\n%s", errOut)
	}
	code, _, errOut = bitvk("run", "--shape", "tiny", "--tokens", "1,2,3", "-n", "2")
	if code != 0 || !strings.Contains(errOut, "bitvk: ") {
		t.Errorf("run with --backend auto: exit %d, no note on the choice:\n%s", code, errOut)
	}
	code, _, errOut = bitvk("run", "--shape", "tiny", "--backend", "vulkan", "--device", "42", "--tokens", "1", "-n", "1")
	if code != 1 || !strings.Contains(errOut, "no device 42") {
		t.Errorf("--device 42: exit %d: %s", code, errOut)
	}
}

// check needs Vulkan: a device it cannot open is an error that does not
// suggest the CPU backend (which run's errors do).
func TestCheckNoSuchDevice(t *testing.T) {
	needVulkan(t)
	code, _, stderr := bitvk("check", "--shape", "tiny", "--device", "99", "-n", "2")
	if code != 1 || !strings.Contains(stderr, "no device 99") || strings.Contains(stderr, "--backend cpu") {
		t.Errorf("check --device 99: exit %d, %q; want exit 1 naming the device, without a --backend cpu hint", code, stderr)
	}
	if code, _, stderr := bitvk("run", "--shape", "tiny", "--backend", "vulkan", "--device", "99", "-n", "2", "-p", "x"); code != 1 || !strings.Contains(stderr, "--backend cpu") {
		t.Errorf("run --device 99: exit %d, %q; want the --backend cpu hint", code, stderr)
	}
}

// bench names the Vulkan kernel shapes BITVK_VK_TUNE changed, in its table
// and its JSON, so that a sweep's results say what they timed; a bad
// tuning is an error naming the variable.
func TestBenchVulkanTune(t *testing.T) {
	needVulkan(t)
	t.Setenv(gpu.TuneEnv, "vec=4,layer=6")
	code, out, errOut := bitvk("bench", "--shape", "tiny", "--backend", "vulkan", "-p", "8", "-n", "2", "-r", "1")
	if code != 0 || !strings.Contains(out, "vec=4,layer=6") {
		t.Fatalf("bench: exit %d, no tuning in the table:\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = bitvk("bench", "--shape", "tiny", "--backend", "vulkan", "-p", "0", "-n", "2", "-r", "1", "--json")
	if code != 0 || !strings.Contains(out, `"vk_tune": "vec=4,layer=6"`) {
		t.Fatalf("bench --json: exit %d, no vk_tune:\n%s\n%s", code, out, errOut)
	}
	t.Setenv(gpu.TuneEnv, "vec=3")
	if code, _, errOut = bitvk("bench", "--shape", "tiny", "--backend", "vulkan", "-p", "0", "-n", "2", "-r", "1"); code == 0 || !strings.Contains(errOut, gpu.TuneEnv) {
		t.Errorf("bench with %s=vec=3: exit %d, %q", gpu.TuneEnv, code, errOut)
	}
}
