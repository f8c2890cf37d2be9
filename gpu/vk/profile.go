//go:build cgo

package vk

import (
	"fmt"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// Counts counts the recorded commands.
func (r *Recording) Counts() Counts {
	var n Counts
	for _, c := range r.cmds {
		switch c.kind {
		case cmdDispatch:
			n.Dispatches++
		case cmdBarrier:
			n.Barriers++
		default:
			n.Transfers++
		}
	}
	return n
}

// Profile asks Finish to write a GPU timestamp after every command, so that
// Timings can tell what each took. It fails, saying why, on a device whose
// compute queue has no timestamps.
func (r *Recording) Profile() error {
	switch {
	case !r.usable("profile"):
		if r.err != nil {
			return r.err
		}
		return fmt.Errorf("vulkan: profiling %s: the recording is finished or released", r.name)
	case r.dev.info.TimestampBits == 0:
		return fmt.Errorf("vulkan: profiling %s: %s has no timestamps on its compute queue (timestampValidBits 0)", r.name, r.dev.info.Name)
	case r.dev.info.TimestampPeriod <= 0:
		return fmt.Errorf("vulkan: profiling %s: %s reports a timestamp period of %g ns", r.name, r.dev.info.Name, r.dev.info.TimestampPeriod)
	}
	r.profile = true
	return nil
}

// makeQueries creates the timestamp query pool: one before the first
// command and one after each non-barrier command.
func (r *Recording) makeQueries() error {
	n := uint32(1)
	for _, c := range r.cmds {
		if c.kind != cmdBarrier {
			n++
		}
	}
	var pool vulkan.QueryPool
	if res := vulkan.CreateQueryPool(r.dev.dev, &vulkan.QueryPoolCreateInfo{
		SType:      vulkan.StructureTypeQueryPoolCreateInfo,
		QueryType:  vulkan.QueryTypeTimestamp,
		QueryCount: n,
	}, nil, &pool); res != vulkan.Success {
		return r.dev.errorf(res, "creating the timestamp queries of %s (%d)", r.name, n)
	}
	r.queries, r.nquery = pool, n
	return nil
}

// Timings returns what each command took in the last Submit of a profiled
// recording, in recording order (barriers left out).
func (r *Recording) Timings() ([]Timing, error) {
	switch {
	case r.released:
		return nil, fmt.Errorf("vulkan: timings of %s: the recording is released", r.name)
	case !r.finished || !r.profile || r.queries == nil:
		return nil, fmt.Errorf("vulkan: timings of %s: not a finished profiled recording (call Profile before Finish)", r.name)
	}
	ts := make([]uint64, r.nquery)
	if res := vulkan.GetQueryPoolResults(r.dev.dev, r.queries, 0, r.nquery, uint(8*len(ts)), unsafe.Pointer(&ts[0]), 8,
		vulkan.QueryResultFlags(vulkan.QueryResult64Bit|vulkan.QueryResultWaitBit)); res != vulkan.Success {
		return nil, r.dev.errorf(res, "reading the timestamps of %s (was it submitted?)", r.name)
	}
	mask := ^uint64(0)
	if b := r.dev.info.TimestampBits; b < 64 {
		mask = 1<<b - 1
	}
	period := float64(r.dev.info.TimestampPeriod)
	var out []Timing
	q := 0
	for _, c := range r.cmds {
		if c.kind == cmdBarrier {
			continue
		}
		t := Timing{Label: c.label, Bytes: c.bytes, Nanoseconds: float64((ts[q+1]-ts[q])&mask) * period}
		q++
		switch c.kind {
		case cmdDispatch:
			t.Kind, t.Kernel, t.Groups = "dispatch", c.kernel.name, [3]uint32{c.x, c.y, c.z}
		case cmdCopy:
			t.Kind, t.Kernel = "copy", "copy"
		case cmdFill:
			t.Kind, t.Kernel = "fill", "fill"
		}
		if t.Label == "" {
			t.Label = t.Kernel
		}
		out = append(out, t)
	}
	return out, nil
}
