package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
)

// deviceJSON is one device as `bitvk devices --json` prints it.
type deviceJSON struct {
	Index                 int        `json:"index"`
	Name                  string     `json:"name"`
	Type                  string     `json:"type"`
	Default               bool       `json:"default"`
	VendorID              uint32     `json:"vendor_id"`
	DeviceID              uint32     `json:"device_id"`
	Driver                string     `json:"driver"`
	DriverVersion         string     `json:"driver_version"`
	APIVersion            string     `json:"api_version"`
	Heaps                 []heapJSON `json:"memory_heaps"`
	MaxStorageBufferRange uint64     `json:"max_storage_buffer_range"`
	MaxAllocation         uint64     `json:"max_memory_allocation_size"`
	MaxWorkgroup          uint32     `json:"max_compute_workgroup_invocations"`
	MaxShared             uint32     `json:"max_compute_shared_memory_size"`
	SubgroupSize          uint32     `json:"subgroup_size"`
	SubgroupOps           []string   `json:"subgroup_operations"`
	Features              []string   `json:"features"`
	TimestampBits         uint32     `json:"timestamp_valid_bits"`
	TimestampPeriodNs     float32    `json:"timestamp_period_ns"`
	Missing               []string   `json:"missing_features"`
	CoopMat               []string   `json:"cooperative_matrix_shapes,omitempty"`
	// Tunings are the entries of the tuning file (bitvk tune) for this
	// device and its driver, by the rest of their key (kernels and model).
	Tunings map[string]gpu.TuneEntry `json:"tunings,omitempty"`
}

type heapJSON struct {
	Size        uint64 `json:"size"`
	DeviceLocal bool   `json:"device_local"`
}

// allFeatures are the optional features devices reports, present or not.
var allFeatures = vk.Features{Storage16: true, Storage8: true, Int8: true, Float16: true, Int64: true,
	IntegerDot: true, IntegerDotAccelerated: true, SubgroupArithmetic: true, SubgroupSizeControl: true, CooperativeMatrix: true}

func runDevices(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("devices", "[--json]", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, "unexpected argument %q", pos[0])
	}
	devs, err := gpu.Devices()
	if err != nil {
		return fmt.Errorf("no Vulkan device: %w (bitvk runs on the CPU)", err)
	}
	best := vk.Pick(devs)
	tuneFile := defaultTuneFile()
	tunings := map[string]gpu.TuneEntry{}
	if tuneFile != "" {
		if tunings, err = gpu.ReadTuneFile(tuneFile); err != nil {
			return err
		}
	}
	var out []deviceJSON
	for _, d := range devs {
		j := deviceJSON{Index: d.Index, Name: d.Name, Type: d.Type, Default: d.Index == best,
			VendorID: d.VendorID, DeviceID: d.DeviceID, Driver: d.Driver, DriverVersion: d.DriverVersion, APIVersion: d.APIVersion,
			MaxStorageBufferRange: d.MaxStorageBufferRange, MaxAllocation: d.MaxMemoryAllocationSize,
			MaxWorkgroup: d.MaxComputeWorkGroupInvocations, MaxShared: d.MaxComputeSharedMemorySize,
			SubgroupSize: d.SubgroupSize, SubgroupOps: d.SubgroupOps, Features: d.Features.Names(),
			TimestampBits: d.TimestampBits, TimestampPeriodNs: d.TimestampPeriod}
		for _, h := range d.Heaps {
			j.Heaps = append(j.Heaps, heapJSON{h.Size, h.DeviceLocal})
		}
		for _, f := range allFeatures.Names() {
			if !contains(j.Features, f) {
				j.Missing = append(j.Missing, f)
			}
		}
		for _, s := range d.CoopMat {
			j.CoopMat = append(j.CoopMat, s.String())
		}
		for k, e := range tunings {
			if rest, ok := strings.CutPrefix(k, gpu.TuneDevice(d)); ok {
				if j.Tunings == nil {
					j.Tunings = map[string]gpu.TuneEntry{}
				}
				j.Tunings[rest] = e
			}
		}
		out = append(out, j)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, d := range out {
		def := ""
		if d.Default {
			def = "  (default)"
		}
		fmt.Fprintf(stdout, "device %d: %s [%s]%s\n", d.Index, d.Name, d.Type, def)
		fmt.Fprintf(stdout, "  driver:    %s (version %s), Vulkan %s, vendor 0x%04x device 0x%04x\n", d.Driver, d.DriverVersion, d.APIVersion, d.VendorID, d.DeviceID)
		var heaps []string
		for _, h := range d.Heaps {
			kind := "host"
			if h.DeviceLocal {
				kind = "device-local"
			}
			heaps = append(heaps, fmt.Sprintf("%s %s", byteSize(h.Size), kind))
		}
		fmt.Fprintf(stdout, "  memory:    %s\n", strings.Join(heaps, ", "))
		fmt.Fprintf(stdout, "  limits:    maxStorageBufferRange %s, maxMemoryAllocationSize %s, workgroup ≤ %d invocations, %s shared\n",
			byteSize(d.MaxStorageBufferRange), byteSize(d.MaxAllocation), d.MaxWorkgroup, byteSize(uint64(d.MaxShared)))
		fmt.Fprintf(stdout, "  subgroups: %d wide: %s\n", d.SubgroupSize, strings.Join(d.SubgroupOps, ", "))
		fmt.Fprintf(stdout, "  features:  %s\n", strings.Join(d.Features, ", "))
		if len(d.Missing) > 0 {
			fmt.Fprintf(stdout, "  missing:   %s\n", strings.Join(d.Missing, ", "))
		}
		if len(d.CoopMat) > 0 {
			fmt.Fprintf(stdout, "  coopmat:   %s\n", strings.Join(d.CoopMat, ", "))
		}
		if d.TimestampBits > 0 {
			fmt.Fprintf(stdout, "  timers:    %d-bit timestamps on the compute queue, %g ns per tick (bitvk bench --profile)\n", d.TimestampBits, d.TimestampPeriodNs)
		} else {
			fmt.Fprintf(stdout, "  timers:    none on the compute queue (bitvk bench --profile cannot time kernels here)\n")
		}
		keys := make([]string, 0, len(d.Tunings))
		for k := range d.Tunings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e := d.Tunings[k]
			shape := e.Tune
			if shape == "" {
				shape = "the defaults"
			}
			fmt.Fprintf(stdout, "  tuned:     %s: %s (%s: %.4g and %.4g tok/s, the defaults %.4g and %.4g; bitvk tune, %s)\n",
				k, shape, e.Test, e.Decode, e.Prompt, e.DefaultDecode, e.DefaultPrompt, tuneFile)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// byteSize prints a size in the largest binary unit that keeps it ≥ 1.
func byteSize(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".") + " " + units[u]
}
