//go:build cgo

package vk

import (
	"errors"
	"strings"
	"testing"
)

// TestNoLoaderIsAClearError stands in for a machine without libvulkan.so.1:
// the error wraps ErrUnavailable (so callers fall back to the CPU) and says
// what was missing and what to install, on one line.
func TestNoLoaderIsAClearError(t *testing.T) {
	gipa, err := openLoader([]string{"libbitvk-no-such-loader.so.1", "libbitvk-no-such-loader.so"})
	if gipa != nil || err == nil {
		t.Fatal("opened a loader that does not exist")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error does not wrap ErrUnavailable: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"no Vulkan loader", "libbitvk-no-such-loader.so.1", "libvulkan1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q spans lines", msg)
	}
}
