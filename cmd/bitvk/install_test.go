//go:build cgo && linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallWithoutSystemVulkanHeaders does what a new user's
// `go install github.com/bitvk/bitvk/cmd/bitvk@latest` does on a machine
// without the Vulkan SDK, here where the SDK may well be installed: it runs
// `go install ./cmd/bitvk` with a C compiler that cannot see any system
// directory's vulkan/ or vk_video/ headers, records every header each
// compile read (-MD), and checks that every Vulkan header came from
// third_party/vulkan-headers (or from vulkan-go's own copy of the 1.1
// headers, for its package). Then the binary must run: version --json,
// devices (lavapipe under BITVK_REQUIRE_VULKAN=1) and completion bash.
func TestInstallWithoutSystemVulkanHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk's cgo packages from scratch")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cc := strings.Fields(goOutput(t, root, goTool, "env", "CC"))
	if len(cc) == 0 {
		t.Fatal("go env CC is empty")
	}
	ccPath, err := exec.LookPath(cc[0])
	if err != nil {
		t.Fatalf("cgo is on but its C compiler %q is missing: %v", cc[0], err)
	}

	tmp := t.TempDir()
	var isystem []string
	var hidden []string
	for i, dir := range includeDirs(t, append([]string{ccPath}, cc[1:]...)) {
		if !hasVulkanHeaders(dir) {
			isystem = append(isystem, dir)
			continue
		}
		mirror := filepath.Join(tmp, fmt.Sprintf("include%d", i))
		mirrorWithoutVulkan(t, dir, mirror)
		isystem = append(isystem, mirror)
		hidden = append(hidden, dir)
	}
	t.Logf("system include directories with Vulkan headers, hidden from the compiler: %v", hidden)

	// The wrapper: the real compiler with its standard include directories
	// replaced by the list above, and a dependency file per compile.
	deps := filepath.Join(tmp, "deps")
	if err := os.Mkdir(deps, 0o755); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	// Each compile leaves NAME.d and, in NAME.cwd, the directory its
	// relative paths start from.
	fmt.Fprintf(&script, "#!/bin/sh\nd=$(mktemp %s) && pwd >\"$d.cwd\" || exit 1\nexec %s", shQuote(filepath.Join(deps, "XXXXXXXX")), shQuote(ccPath))
	for _, a := range cc[1:] {
		fmt.Fprintf(&script, " %s", shQuote(a))
	}
	script.WriteString(" -nostdinc")
	for _, d := range isystem {
		fmt.Fprintf(&script, " -isystem %s", shQuote(d))
	}
	script.WriteString(" -MD -MF \"$d.d\" \"$@\"\n")
	wrapper := filepath.Join(tmp, "cc")
	if err := os.WriteFile(wrapper, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}

	// The wrapper's path is new on every run, so go rebuilds every cgo
	// package with it rather than taking objects from the build cache.
	gobin := filepath.Join(tmp, "bin")
	install := exec.Command(goTool, "install", "./cmd/bitvk")
	install.Dir = root
	install.Env = append(os.Environ(), "CC="+wrapper, "CGO_ENABLED=1", "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/bitvk without the system's Vulkan headers failed: %v\n%s", err, out)
	}

	vendored := realPath(t, filepath.Join(root, "third_party", "vulkan-headers", "include"))
	vulkanGo := realPath(t, goOutput(t, root, goTool, "list", "-m", "-f", "{{.Dir}}", "github.com/vulkan-go/vulkan"))
	files, _ := filepath.Glob(filepath.Join(deps, "*.d"))
	usedVendored := false
	for _, f := range files {
		cwd, err := os.ReadFile(strings.TrimSuffix(f, ".d") + ".cwd")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range depHeaders(t, f) {
			dir := filepath.Base(filepath.Dir(h))
			if dir != "vulkan" && dir != "vk_video" {
				continue
			}
			if !filepath.IsAbs(h) {
				h = filepath.Join(strings.TrimSpace(string(cwd)), h)
			}
			h = realPath(t, h)
			switch {
			case within(vendored, h):
				usedVendored = true
			case within(vulkanGo, h):
			default:
				t.Errorf("a compile read %s: only third_party/vulkan-headers (and vulkan-go's own copy) may provide Vulkan headers", h)
			}
		}
	}
	if len(files) == 0 || !usedVendored {
		t.Errorf("%d dependency files, none naming third_party/vulkan-headers: did the shim compile with the wrapper?", len(files))
	}

	bin := filepath.Join(gobin, "bitvk")
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("bitvk version --json: %v", err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil || !v.Cgo || v.Module != modulePath || v.CPU.Kernels == "" {
		t.Fatalf("bitvk version --json: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "devices").CombinedOutput()
	switch {
	case err == nil && strings.Contains(string(out), "device 0:"):
	case requireVulkan():
		t.Errorf("bitvk devices found no device (BITVK_REQUIRE_VULKAN=1): %v\n%s", err, out)
	case !strings.Contains(string(out), "no Vulkan device"):
		t.Errorf("bitvk devices without a device should say so: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "completion", "bash").Output()
	if err != nil || !strings.Contains(string(out), "complete -o filenames -F _bitvk bitvk") {
		t.Errorf("bitvk completion bash: %v\n%s", err, out)
	}
}

func requireVulkan() bool { return os.Getenv("BITVK_REQUIRE_VULKAN") == "1" }

func goOutput(t *testing.T, dir, goTool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// includeDirs lists the compiler's standard #include <...> directories, as
// `cc -v` prints them.
func includeDirs(t *testing.T, cc []string) []string {
	t.Helper()
	cmd := exec.Command(cc[0], append(cc[1:], "-xc", "-E", "-v", os.DevNull)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -v: %v\n%s", cc[0], err, out)
	}
	var dirs []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#include <...> search starts here:"):
			in = true
		case strings.HasPrefix(line, "End of search list."):
			in = false
		case in && strings.HasPrefix(line, " "):
			dirs = append(dirs, strings.TrimSpace(line))
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("%s -v printed no include directories:\n%s", cc[0], out)
	}
	return dirs
}

func hasVulkanHeaders(dir string) bool {
	for _, sub := range []string{"vulkan", "vk_video"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// mirrorWithoutVulkan makes mirror a directory of symbolic links to every
// entry of dir except vulkan/ and vk_video/.
func mirrorWithoutVulkan(t *testing.T, dir, mirror string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "vulkan" || e.Name() == "vk_video" {
			continue
		}
		if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(mirror, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// depHeaders returns the prerequisites a make-style dependency file lists.
func depHeaders(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range strings.Fields(strings.ReplaceAll(string(b), "\\\n", " ")) {
		if !strings.HasSuffix(f, ":") && f != "\\" {
			files = append(files, f)
		}
	}
	return files
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
