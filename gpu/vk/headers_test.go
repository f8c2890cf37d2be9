package vk

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVendoredHeadersAgree checks that third_party/vulkan-headers, its
// README and HeadersVersion name one version: all three are written by
// scripts/update-vulkan-headers.sh, and a hand edit of any shows up here.
func TestVendoredHeadersAgree(t *testing.T) {
	dir := filepath.Join("..", "..", "third_party", "vulkan-headers")
	core, err := os.ReadFile(filepath.Join(dir, "include", "vulkan", "vulkan_core.h"))
	if err != nil {
		t.Fatalf("the vendored Vulkan headers are missing (run scripts/update-vulkan-headers.sh): %v", err)
	}
	m := regexp.MustCompile(`(?m)^#define VK_HEADER_VERSION (\d+)$`).FindSubmatch(core)
	if m == nil {
		t.Fatal("vulkan_core.h defines no VK_HEADER_VERSION")
	}
	if want := HeadersVersion[strings.LastIndex(HeadersVersion, ".")+1:]; string(m[1]) != want {
		t.Errorf("vulkan_core.h is VK_HEADER_VERSION %s, HeadersVersion %s: rerun scripts/update-vulkan-headers.sh", m[1], HeadersVersion)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(readme), "# Vulkan-Headers v"+HeadersVersion+" ") {
		t.Errorf("third_party/vulkan-headers/README.md is not about v%s: rerun scripts/update-vulkan-headers.sh", HeadersVersion)
	}
	licenses, _ := filepath.Glob(filepath.Join(dir, "LICENSE*"))
	if len(licenses) == 0 {
		t.Error("third_party/vulkan-headers carries no license file")
	}
}
