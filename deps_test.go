package bitvk

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/bitvk/bitvk"

// importPolicy is the package graph of ../shared/DESIGN.md, written down:
// for each of our packages, which of our packages its (non-test) code may
// import. A package missing here fails the test until it is placed.
var importPolicy = map[string][]string{
	".":         {},
	"gguf":      {},
	"tokenizer": {},
	"nn":        {"gguf", "tokenizer"},
	"nn/ref":    {"nn"},
	"nn/nntest": {"gguf", "nn", "nn/ref", "nn/synth"},
	"nn/synth":  {"gguf", "nn"},
	"nn/spec":   {"nn"},
	"cpu":       {"nn"},
	"spirv":     {},
	"gpu":       {"nn", "spirv", "gpu/*"},
	"gpu/*":     {"nn", "spirv", "gpu/*"},
	"server":    {"nn", "tokenizer"},
	"view":      {"nn", "gpu", "gpu/*", "spirv", "tokenizer"},
	"hub":       {},
	"hub/*":     {},
	"cmd/bitvk": {"*"},
	"train":     {"nn", "gguf", "tokenizer", "cpu"},
	"models":    {},
	"convert":   {"gguf", "nn", "tokenizer"},
	"tools/*":   {"gguf"},
}

// cgoAllowed lists where `import "C"` may appear: under gpu/ and in view
// (the window, over GLFW), so that CGO_ENABLED=0 builds everything else.
func cgoAllowed(pkg string) bool { return strings.HasPrefix(pkg, "gpu/") || pkg == "view" }

// thirdParty lists which of our packages may import which outside modules
// (the standard library is always allowed).
var thirdParty = map[string][]string{
	"github.com/chzyer/readline":  {"cmd/bitvk"},
	"github.com/vulkan-go/vulkan": {"gpu", "gpu/*"},
	"golang.org/x/sys/cpu":        {"cpu"},
	// bitvk view's window (cgo: its files build only with cgo).
	"github.com/go-gl/glfw/v3.3/glfw": {"view"},

	// The HTTP server's request ids and Prometheus metrics.
	"github.com/google/uuid":                                    {"server"},
	"github.com/prometheus/client_golang/prometheus":            {"server"},
	"github.com/prometheus/client_golang/prometheus/collectors": {"server"},
	"github.com/prometheus/client_golang/prometheus/promhttp":   {"server"},
}

func matches(pattern, pkg string) bool {
	if pattern == "*" {
		return true
	}
	if strings.HasSuffix(pattern, "/*") {
		return strings.HasPrefix(pkg, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == pkg
}

func policyFor(pkg string) ([]string, bool) {
	if p, ok := importPolicy[pkg]; ok {
		return p, true
	}
	for pattern, p := range importPolicy {
		if strings.HasSuffix(pattern, "/*") && matches(pattern, pkg) {
			return p, true
		}
	}
	return nil, false
}

func TestImportPolicy(t *testing.T) {
	imports := map[string]map[string]bool{} // package dir → imported paths (non-test files)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "build") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != "." && err == nil {
				return filepath.SkipDir // a module of its own (a generator): its imports never reach ours
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports[pkg][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 3 {
		t.Fatalf("found only %d packages: is the test running in the module root?", len(imports))
	}
	for pkg, imps := range imports {
		allowed, ok := policyFor(pkg)
		if !ok {
			t.Errorf("package %s is not in the import policy: add it to importPolicy in deps_test.go (and to DESIGN.md)", pkg)
			continue
		}
		for imp := range imps {
			switch {
			case imp == "C":
				if !cgoAllowed(pkg) {
					t.Errorf("%s uses cgo: only packages under gpu/ and view may", pkg)
				}
			case imp == module || strings.HasPrefix(imp, module+"/"):
				dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
				if strings.HasPrefix(dep, "tools") {
					t.Errorf("%s imports %s: tools are generators and are never imported", pkg, dep)
				}
				if !slices.ContainsFunc(allowed, func(p string) bool { return matches(p, dep) }) {
					t.Errorf("%s imports %s, which the policy forbids (allowed: %v)", pkg, dep, allowed)
				}
			case strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
				who, known := thirdParty[imp]
				if !known || !slices.ContainsFunc(who, func(p string) bool { return matches(p, pkg) }) {
					t.Errorf("%s imports third-party %s, which the policy does not allow there", pkg, imp)
				}
			}
		}
	}
}
