package main

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/cpu"
)

func TestVersion(t *testing.T) {
	code, out, stderr := bitvk("version", "--json")
	if code != 0 {
		t.Fatalf("version --json: exit %d: %s", code, stderr)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --json does not parse: %v\n%s", err, out)
	}
	if v.Module != modulePath || v.Version == "" || v.Go != runtime.Version() || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH {
		t.Errorf("version --json: %+v", v)
	}
	if v.CPU.Name != cpu.Name() || v.CPU.Kernels != cpu.Kernels() || len(v.CPU.Available) == 0 || v.CPU.Available[len(v.CPU.Available)-1] != "generic" {
		t.Errorf("version --json: cpu %+v, kernels in use %s", v.CPU, cpu.Kernels())
	}
	if v.Vulkan.Devices == nil || (len(v.Vulkan.Devices) == 0) != (v.Vulkan.Error != "") {
		t.Errorf("version --json: vulkan %+v: no devices must come with the reason", v.Vulkan)
	}
	if os.Getenv("BITVK_REQUIRE_VULKAN") == "1" && (!v.Vulkan.Loader || len(v.Vulkan.Devices) == 0) {
		t.Errorf("version --json found no Vulkan device (BITVK_REQUIRE_VULKAN=1): %+v", v.Vulkan)
	}

	code, text, _ := bitvk("version")
	for _, want := range []string{"bitvk " + v.Version + " (" + modulePath + ")", "commit:", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH, "cpu:     " + cpu.Name() + "\n", cpu.Kernels() + " kernels", "vulkan:"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("version: exit %d, output lacks %q:\n%s", code, want, text)
		}
	}
	if code, alias, _ := bitvk("--version"); code != 0 || alias != text {
		t.Errorf("--version: exit %d, printed\n%s\nnot what version printed", code, alias)
	}
}

// TestHelpSaysWhereToReport checks that every -h ends with where to report
// problems, the overview's too.
func TestHelpSaysWhereToReport(t *testing.T) {
	for _, args := range append([][]string{{"-h"}}, commandHelps()...) {
		code, _, stderr := bitvk(args...)
		if code != 0 || !strings.HasSuffix(stderr, reportProblems+"\n") {
			t.Errorf("%v: exit %d, help does not end with where to report problems:\n%s", args, code, stderr)
		}
	}
}

func commandHelps() [][]string {
	var helps [][]string
	for _, c := range commands {
		helps = append(helps, []string{c.name, "-h"})
	}
	return helps
}
