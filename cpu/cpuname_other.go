//go:build purego || !amd64

package cpu

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// Name returns the CPU's name: the "model name" (or, on arm64, "Hardware"
// or "CPU part") line of /proc/cpuinfo where there is one, else the
// architecture.
func Name() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	found := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if ok && v != "" && found[k] == "" {
			found[k] = v
		}
	}
	for _, k := range []string{"model name", "Hardware", "CPU part"} {
		if v := found[k]; v != "" {
			if k == "CPU part" {
				return runtime.GOARCH + " CPU part " + v
			}
			return v
		}
	}
	return runtime.GOARCH
}
