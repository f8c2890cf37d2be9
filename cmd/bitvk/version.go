package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
)

// modulePath is bitvk's Go module, where `go install` fetches it from and
// whose issue tracker takes bug reports.
const modulePath = "github.com/bitvk/bitvk"

// reportProblems ends every command's -h.
const reportProblems = "Report problems at https://" + modulePath + "/issues, with the output of 'bitvk version'."

// versionInfo is what `bitvk version --json` prints: what a bug report needs
// to say about the binary and the machine.
type versionInfo struct {
	Module     string `json:"module"`
	Version    string `json:"version"`               // v1.2.3 from go install; (devel) for a build in a checkout without VCS stamping
	Commit     string `json:"commit,omitempty"`      // the VCS revision, when the build recorded one
	CommitTime string `json:"commit_time,omitempty"` // RFC 3339
	Modified   bool   `json:"modified,omitempty"`    // the checkout had uncommitted changes
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Cgo        bool   `json:"cgo"`
	Tags       string `json:"tags,omitempty"`
	CPU        struct {
		Name      string   `json:"name"`      // the CPU's brand string, vendor, family and model (cpu.Name)
		Kernels   string   `json:"kernels"`   // the kernel set that runs
		Available []string `json:"available"` // every set this CPU can run, fastest first
		Threads   int      `json:"threads"`   // logical CPUs, the default -t
	} `json:"cpu"`
	Vulkan struct {
		Headers   string              `json:"headers,omitempty"` // Vulkan-Headers the shim was compiled against (cgo builds)
		Loader    bool                `json:"loader"`            // a Vulkan loader (libvulkan.so.1) was found
		LoaderAPI string              `json:"loader_api,omitempty"`
		Devices   []versionDeviceJSON `json:"devices"`
		Error     string              `json:"error,omitempty"` // why there is no loader or no device
	} `json:"vulkan"`
}

type versionDeviceJSON struct {
	Index  int    `json:"index"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	Driver string `json:"driver"`
	API    string `json:"api_version"`
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "[--json]", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object (attach it to bug reports)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, "unexpected argument %q", pos[0])
	}
	v := probeVersion()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	printVersion(stdout, v)
	return nil
}

// probeVersion reads the build information Go recorded in the binary and
// looks for a Vulkan loader and devices.
func probeVersion() versionInfo {
	var v versionInfo
	v.Module, v.Version = modulePath, "unknown"
	v.Go, v.OS, v.Arch = runtime.Version(), runtime.GOOS, runtime.GOARCH
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "CGO_ENABLED":
				v.Cgo = s.Value == "1"
			case "-tags":
				v.Tags = s.Value
			}
		}
	}
	v.CPU.Name, v.CPU.Kernels, v.CPU.Available, v.CPU.Threads = cpu.Name(), cpu.Kernels(), cpu.KernelNames(), runtime.NumCPU()

	if v.Cgo {
		v.Vulkan.Headers = vk.HeadersVersion
	}
	v.Vulkan.Devices = []versionDeviceJSON{}
	api, err := vk.LoaderVersion()
	if err != nil {
		v.Vulkan.Error = err.Error()
		return v
	}
	v.Vulkan.Loader, v.Vulkan.LoaderAPI = true, api
	devs, err := gpu.Devices()
	if err != nil {
		v.Vulkan.Error = err.Error()
		return v
	}
	for _, d := range devs {
		v.Vulkan.Devices = append(v.Vulkan.Devices, versionDeviceJSON{d.Index, d.Name, d.Type, d.Driver, d.APIVersion})
	}
	return v
}

func printVersion(w io.Writer, v versionInfo) {
	fmt.Fprintf(w, "bitvk %s (%s)\n", v.Version, v.Module)
	switch {
	case v.Commit == "":
		fmt.Fprintf(w, "commit:  not recorded (built outside a checkout, or with -buildvcs=false)\n")
	default:
		var notes []string
		if v.CommitTime != "" {
			notes = append(notes, v.CommitTime)
		}
		if v.Modified {
			notes = append(notes, "with uncommitted changes")
		}
		fmt.Fprintf(w, "commit:  %s", v.Commit)
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	}
	build := "cgo"
	if !v.Cgo {
		build = "no cgo: CPU only"
	}
	if v.Tags != "" {
		build += ", tags " + v.Tags
	}
	fmt.Fprintf(w, "go:      %s %s/%s (%s)\n", v.Go, v.OS, v.Arch, build)
	fmt.Fprintf(w, "cpu:     %s\n         %s kernels (this CPU runs %s), %d threads\n", v.CPU.Name, v.CPU.Kernels, strings.Join(v.CPU.Available, ", "), v.CPU.Threads)
	switch {
	case !v.Vulkan.Loader:
		fmt.Fprintf(w, "vulkan:  none (%s); bitvk runs on the CPU\n", v.Vulkan.Error)
	case len(v.Vulkan.Devices) == 0:
		fmt.Fprintf(w, "vulkan:  loader %s, headers %s, no device (%s)\n", v.Vulkan.LoaderAPI, v.Vulkan.Headers, v.Vulkan.Error)
	default:
		fmt.Fprintf(w, "vulkan:  loader %s, headers %s\n", v.Vulkan.LoaderAPI, v.Vulkan.Headers)
		for _, d := range v.Vulkan.Devices {
			fmt.Fprintf(w, "  device %d: %s [%s], %s, Vulkan %s\n", d.Index, d.Name, d.Type, d.Driver, d.API)
		}
	}
}
