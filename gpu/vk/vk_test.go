package vk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireVulkan reports whether tests must fail instead of skipping when no
// Vulkan device (or no validation layer, or no glslangValidator) is at hand.
func requireVulkan() bool { return os.Getenv("BITVK_REQUIRE_VULKAN") == "1" }

// skipOrFail skips the test, or fails it under BITVK_REQUIRE_VULKAN=1.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if requireVulkan() {
		t.Fatalf(format+" (BITVK_REQUIRE_VULKAN=1)", args...)
	}
	t.Skipf(format+" (set BITVK_REQUIRE_VULKAN=1 to fail instead)", args...)
}

// newInstance creates an instance with validation on where the layer is
// installed (required under BITVK_REQUIRE_VULKAN=1). At cleanup it closes
// the instance and fails the test on any validation message.
func newInstance(t *testing.T) *Instance {
	t.Helper()
	inst, err := NewInstance(InstanceOptions{Validation: true, SyncValidation: true})
	if err != nil && !requireVulkan() && !errors.Is(err, ErrUnavailable) && strings.Contains(err.Error(), validationLayerName) {
		t.Logf("running without validation: %v", err)
		inst, err = NewInstance(InstanceOptions{})
	}
	if err != nil {
		skipOrFail(t, "no Vulkan: %v", err)
	}
	t.Cleanup(func() {
		inst.Close()
		for _, m := range inst.Messages() {
			t.Errorf("validation: %s", m)
		}
	})
	return inst
}

// validationLayerName is the layer named in NewInstance's error when it is
// missing.
const validationLayerName = "VK_LAYER_KHRONOS_validation"

// openDevice opens the device Pick chooses; the device closes at cleanup,
// before the instance.
func openDevice(t *testing.T) (*Instance, *Device) {
	t.Helper()
	inst := newInstance(t)
	devs := inst.Devices()
	if len(devs) == 0 {
		skipOrFail(t, "no Vulkan devices")
	}
	d, err := inst.Open(Pick(devs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return inst, d
}

// checkMessages fails the test on validation messages received so far.
func checkMessages(t *testing.T, inst *Instance) {
	t.Helper()
	for _, m := range inst.Messages() {
		t.Errorf("validation: %s", m)
	}
}

func TestDevices(t *testing.T) {
	inst := newInstance(t)
	devs := inst.Devices()
	if len(devs) == 0 {
		skipOrFail(t, "no Vulkan devices")
	}
	for i, d := range devs {
		t.Logf("device %d: %s (%s), vendor %#x device %#x, driver %q (%s), API %s, heaps %v, features %v, subgroup %d %v, queue family %d",
			i, d.Name, d.Type, d.VendorID, d.DeviceID, d.Driver, d.DriverVersion, d.APIVersion, d.Heaps, d.Features.Names(), d.SubgroupSize, d.SubgroupOps, d.ComputeQueueFamily)
		if d.Index != i {
			t.Errorf("device %d has Index %d", i, d.Index)
		}
		if d.Name == "" || d.APIVersion == "" || len(d.Heaps) == 0 || d.MaxStorageBufferRange == 0 || d.ComputeQueueFamily < 0 {
			t.Errorf("device %d is described incompletely: %+v", i, d)
		}
		if !strings.HasPrefix(d.Name, "llvmpipe") {
			continue
		}
		// What Mesa's lavapipe reports (vulkaninfo), the CI device.
		if d.Type != "cpu" || d.VendorID != 0x10005 {
			t.Errorf("lavapipe: type %q vendor %#x, want cpu 0x10005", d.Type, d.VendorID)
		}
		if d.MaxStorageBufferRange != 134217728 {
			t.Errorf("lavapipe: MaxStorageBufferRange %d, want 134217728", d.MaxStorageBufferRange)
		}
		f := d.Features
		if !f.Storage16 || !f.Storage8 || !f.Int8 || !f.Float16 || !f.Int64 || !f.IntegerDot || !f.SubgroupArithmetic || !f.SubgroupSizeControl {
			t.Errorf("lavapipe: features %v, want storage16 storage8 int8 float16 int64 integer_dot subgroup_arithmetic subgroup_size_control", f.Names())
		}
		if !strings.HasPrefix(d.Driver, "llvmpipe Mesa") {
			t.Errorf("lavapipe: Driver %q, want driverName + driverInfo", d.Driver)
		}
		if d.MaxMemoryAllocationSize == 0 || d.MinStorageBufferOffsetAlignment == 0 || d.SubgroupSize == 0 || d.MaxComputeWorkGroupCount[0] == 0 {
			t.Errorf("lavapipe: limits missing: %+v", d)
		}
	}
	d, err := inst.Open(Pick(devs))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	e, have := d.Enabled(), d.Info().Features
	if e.Int8 != have.Int8 || e.Storage8 != have.Storage8 || e.IntegerDot != have.IntegerDot || e.CooperativeMatrix != d.Info().coopNV || e.VulkanMemoryModel != (have.VulkanMemoryModel && d.Info().coopNV) {
		t.Errorf("Enabled %v, device has %v", e.Names(), have.Names())
	}
	if _, err := inst.Open(len(devs)); err == nil {
		t.Error("Open of a device index out of range succeeded")
	}
}

// pattern returns n pseudo-random bytes.
func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestUploadDownload(t *testing.T) {
	inst, d := openDevice(t)
	const size = stagingSizeForTest + 3<<20 + 20 // larger than the staging buffer
	b, err := d.NewBuffer("roundtrip", size, false)
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() != size || b.Name() != "roundtrip" || b.Mapped() != nil {
		t.Errorf("buffer: size %d name %q mapped %v", b.Size(), b.Name(), b.Mapped() != nil)
	}
	data := pattern(size, 1)
	if err := d.Upload(b, 0, data); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := d.Download(b, 0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("download differs from upload")
	}
	// An offset, odd lengths.
	part := pattern(1<<20+3, 2)
	const off = 12345
	if err := d.Upload(b, off, part); err != nil {
		t.Fatal(err)
	}
	copy(data[off:], part)
	got2 := make([]byte, 2<<20+1)
	if err := d.Download(b, off-7, got2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got2, data[off-7:off-7+len(got2)]) {
		t.Fatal("download at an offset differs")
	}
	// Fill, then check the bytes around it are untouched.
	if err := d.Fill(b, 4096, 8192, 0xdeadbeef); err != nil {
		t.Fatal(err)
	}
	got3 := make([]byte, 16384)
	if err := d.Download(b, 0, got3); err != nil {
		t.Fatal(err)
	}
	for i := 4096; i < 4096+8192; i += 4 {
		binary.LittleEndian.PutUint32(data[i:], 0xdeadbeef)
	}
	if !bytes.Equal(got3, data[:16384]) {
		t.Fatal("fill wrote the wrong bytes")
	}
	// Host buffers are mapped.
	h, err := d.NewBuffer("host", 1000, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Mapped()) != 1000 {
		t.Fatalf("host buffer maps %d bytes", len(h.Mapped()))
	}
	if err := d.Upload(h, 10, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := d.Fill(h, 20, 8, 0x01020304); err != nil {
		t.Fatal(err)
	}
	if string(h.Mapped()[10:15]) != "hello" || !bytes.Equal(h.Mapped()[20:28], []byte{4, 3, 2, 1, 4, 3, 2, 1}) {
		t.Errorf("host buffer holds %v", h.Mapped()[:32])
	}
	// Bounds.
	for _, err := range []error{
		d.Upload(b, size-2, []byte{1, 2, 3}),
		d.Download(b, -1, got[:1]),
		d.Fill(b, 2, 4, 0),
		d.Fill(b, size-4, 8, 0),
	} {
		if err == nil || !strings.Contains(err.Error(), "roundtrip") {
			t.Errorf("out-of-bounds transfer: error %v, want one naming the buffer", err)
		}
	}
	checkMessages(t, inst)
}

// stagingSizeForTest mirrors the staging size, so the round trip crosses
// chunk boundaries.
const stagingSizeForTest = 32 << 20

// testShader doubles its input and adds a push constant: b[i] = 2·a[i] + add
// for i < n, with the workgroup size from specialization constant 0.
const testShader = `#version 450
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push { uint n; uint add; } pc;
layout(std430, binding = 0) readonly buffer In { uint a[]; };
layout(std430, binding = 1) writeonly buffer Out { uint b[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i < pc.n) b[i] = 2u * a[i] + pc.add;
}
`

// compileGLSL compiles a compute shader with glslangValidator.
func compileGLSL(t testing.TB, src string) []byte {
	t.Helper()
	tool, err := exec.LookPath("glslangValidator")
	if err != nil {
		skipOrFail(t, "glslangValidator not found (install glslang-tools)")
	}
	out := filepath.Join(t.TempDir(), "shader.spv")
	cmd := exec.Command(tool, "-V", "--target-env", "vulkan1.1", "--stdin", "-S", "comp", "-o", out)
	cmd.Stdin = strings.NewReader(src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("glslangValidator: %v\n%s", err, msg)
	}
	spv, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return spv
}

// push packs uint32 push constants.
func push(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func TestKernelReplay(t *testing.T) {
	spv := compileGLSL(t, testShader)
	inst, d := openDevice(t)
	const n, local = 1000, 64
	k, err := d.NewKernel("double_add", spv, 2, 8, []uint32{local})
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.NewBuffer("in", 4*n, true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.NewBuffer("out", 4*n, false)
	if err != nil {
		t.Fatal(err)
	}
	back, err := d.NewBuffer("readback", 4*n+64, true)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Record("replay")
	r.Dispatch(k, []Range{{Buf: in}, {Buf: out}}, push(n, 7), (n+local-1)/local, 1, 1)
	r.Barrier()
	r.Copy(Range{Buf: out}, Range{Buf: back, Off: 64})
	r.Fill(Range{Buf: back, Off: 0, Size: 64}, 0xffffffff)
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	for round := range uint32(3) {
		for i := range uint32(n) {
			binary.LittleEndian.PutUint32(in.Mapped()[4*i:], i*round+1)
		}
		if err := d.Submit(r); err != nil {
			t.Fatal(err)
		}
		m := back.Mapped()
		for i := range uint32(n) {
			if got, want := binary.LittleEndian.Uint32(m[64+4*i:]), 2*(i*round+1)+7; got != want {
				t.Fatalf("round %d: out[%d] = %d, want %d", round, i, got, want)
			}
		}
		if got := binary.LittleEndian.Uint32(m[60:]); got != 0xffffffff {
			t.Fatalf("round %d: fill left %#x", round, got)
		}
		dl := make([]byte, 8)
		if err := d.Download(out, 4*(n-2), dl); err != nil {
			t.Fatal(err)
		}
		if got, want := binary.LittleEndian.Uint32(dl[4:]), 2*((n-1)*round+1)+7; got != want {
			t.Fatalf("round %d: downloaded out[n-1] = %d, want %d", round, got, want)
		}
	}
	r.Release()
	r.Release()
	if err := d.Submit(r); err == nil {
		t.Error("Submit of a released recording succeeded")
	}
	checkMessages(t, inst)
}

func TestRecordingErrors(t *testing.T) {
	spv := compileGLSL(t, testShader)
	inst, d := openDevice(t)
	k, err := d.NewKernel("double_add", spv, 2, 8, []uint32{64})
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.NewBuffer("alpha", 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.NewBuffer("beta", 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		record func(r *Recording)
		want   []string // substrings of the error
	}{
		{"offset beyond buffer", func(r *Recording) {
			r.Dispatch(k, []Range{{Buf: a}, {Buf: b, Off: 2048}}, push(1, 2), 1, 1, 1)
		}, []string{"rec", "double_add", "beta", "command 0"}},
		{"range beyond buffer", func(r *Recording) {
			r.Barrier()
			r.Dispatch(k, []Range{{Buf: a, Off: 512, Size: 1024}, {Buf: b}}, push(1, 2), 1, 1, 1)
		}, []string{"double_add", "alpha", "command 1"}},
		{"misaligned offset", func(r *Recording) {
			r.Dispatch(k, []Range{{Buf: a, Off: 4}, {Buf: b}}, push(1, 2), 1, 1, 1)
		}, []string{"double_add", "alpha", "minStorageBufferOffsetAlignment"}},
		{"wrong push size", func(r *Recording) {
			r.Dispatch(k, []Range{{Buf: a}, {Buf: b}}, push(1), 1, 1, 1)
		}, []string{"double_add", "push constants"}},
		{"wrong buffer count", func(r *Recording) {
			r.Dispatch(k, []Range{{Buf: a}}, push(1, 2), 1, 1, 1)
		}, []string{"double_add", "1 buffers"}},
		{"too many groups", func(r *Recording) {
			r.Dispatch(k, []Range{{Buf: a}, {Buf: b}}, push(1, 2), 1<<31, 1, 1)
		}, []string{"double_add", "group count"}},
		{"nil buffer", func(r *Recording) {
			r.Dispatch(k, []Range{{Buf: a}, {}}, push(1, 2), 1, 1, 1)
		}, []string{"double_add", "binding 1"}},
		{"copy size mismatch", func(r *Recording) {
			r.Copy(Range{Buf: a, Size: 16}, Range{Buf: b, Size: 32})
		}, []string{"copy", "16", "32"}},
		{"copy overlap", func(r *Recording) {
			r.Copy(Range{Buf: a, Size: 16}, Range{Buf: a, Off: 8})
		}, []string{"copy", "overlap", "alpha"}},
		{"copy does not fit", func(r *Recording) {
			r.Copy(Range{Buf: a}, Range{Buf: b, Off: 16})
		}, []string{"copy", "beta"}},
		{"fill misaligned", func(r *Recording) {
			r.Fill(Range{Buf: a, Off: 2, Size: 4}, 0)
		}, []string{"fill", "alpha"}},
	} {
		r := d.Record("rec")
		tc.record(r)
		err := r.Finish()
		if err == nil {
			t.Errorf("%s: Finish succeeded", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, w)
			}
		}
		if err := d.Submit(r); err == nil {
			t.Errorf("%s: Submit of a failed recording succeeded", tc.name)
		}
		r.Release()
	}
	// A zero group count is skipped silently; an unfinished recording
	// cannot be submitted.
	r := d.Record("empty")
	r.Dispatch(k, []Range{{Buf: a}, {Buf: b}}, push(1, 2), 0, 1, 1)
	if err := d.Submit(r); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Submit before Finish: %v", err)
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(r); err != nil {
		t.Fatal(err)
	}

	// Buffer and kernel creation errors.
	if _, err := d.NewBuffer("huge", int64(d.Info().MaxMemoryAllocationSize)+1, false); err == nil || !strings.Contains(err.Error(), "huge") {
		t.Errorf("oversized buffer: %v", err)
	}
	if _, err := d.NewBuffer("nothing", 0, true); err == nil || !strings.Contains(err.Error(), "nothing") {
		t.Errorf("empty buffer: %v", err)
	}
	if _, err := d.NewKernel("ragged", spv[:len(spv)-1], 2, 8, nil); err == nil || !strings.Contains(err.Error(), "ragged") {
		t.Errorf("ragged SPIR-V: %v", err)
	}
	if _, err := d.NewKernel("garbage", make([]byte, 64), 2, 8, nil); err == nil || !strings.Contains(err.Error(), "garbage") {
		t.Errorf("garbage SPIR-V: %v", err)
	}
	checkMessages(t, inst)
}

func TestCloseTwice(t *testing.T) {
	spv := compileGLSL(t, testShader)
	inst := newInstance(t)
	devs := inst.Devices()
	if len(devs) == 0 {
		skipOrFail(t, "no Vulkan devices")
	}
	d, err := inst.Open(Pick(devs))
	if err != nil {
		t.Fatal(err)
	}
	k, err := d.NewKernel("k", spv, 2, 8, []uint32{32})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.NewBuffer("a", 256, false)
	b, _ := d.NewBuffer("b", 256, true)
	r := d.Record("r")
	r.Dispatch(k, []Range{{Buf: a}, {Buf: b}}, push(64, 1), 2, 1, 1)
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(r); err != nil {
		t.Fatal(err)
	}
	kept := d.Record("kept") // released by Close
	kept.Barrier()
	if err := kept.Finish(); err != nil {
		t.Fatal(err)
	}
	a2, _ := d.NewBuffer("released early", 256, false)
	a2.Release()
	a2.Release()
	r.Release()
	d.Close()
	d.Close()
	if err := d.Submit(kept); err == nil {
		t.Error("Submit after Close succeeded")
	}
	if _, err := d.NewBuffer("late", 16, false); err == nil {
		t.Error("NewBuffer after Close succeeded")
	}
	r.Release()
	k.Release()
	b.Release()
	inst.Close()
	inst.Close()
	if _, err := inst.Open(0); err == nil {
		t.Error("Open after Close succeeded")
	}
}

// TestInstanceClosesDevices: closing the instance first closes its devices.
func TestInstanceClosesDevices(t *testing.T) {
	inst := newInstance(t)
	if len(inst.Devices()) == 0 {
		skipOrFail(t, "no Vulkan devices")
	}
	d, err := inst.Open(Pick(inst.Devices()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.NewBuffer("x", 64, true); err != nil {
		t.Fatal(err)
	}
	inst.Close()
	d.Close()
}

// TestSyncValidation: a copy reading what a dispatch wrote without a
// Barrier between them must be reported, proving the tests would catch a
// missing barrier.
func TestSyncValidation(t *testing.T) {
	spv := compileGLSL(t, testShader)
	inst, d := openDevice(t)
	k, err := d.NewKernel("double_add", spv, 2, 8, []uint32{64})
	if err != nil {
		t.Fatal(err)
	}
	var bufs [3]*Buffer
	for i := range bufs {
		if bufs[i], err = d.NewBuffer("buf", 4096, false); err != nil {
			t.Fatal(err)
		}
	}
	r := d.Record("no barrier")
	r.Dispatch(k, []Range{{Buf: bufs[0]}, {Buf: bufs[1]}}, push(1024, 1), 16, 1, 1)
	r.Copy(Range{Buf: bufs[1]}, Range{Buf: bufs[2]})
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(r); err != nil {
		t.Fatal(err)
	}
	msgs := strings.Join(inst.Messages(), "\n")
	if !strings.Contains(msgs, "SYNC-HAZARD-READ-AFTER-WRITE") {
		if requireVulkan() {
			t.Fatalf("synchronization validation did not report a missing barrier; messages: %q", msgs)
		}
		t.Skipf("synchronization validation is not active (messages: %q)", msgs)
	}
}

// BenchmarkSubmit measures one replay of a one-dispatch recording: the
// per-token overhead of Submit.
func BenchmarkSubmit(b *testing.B) {
	spv := compileGLSL(b, testShader)
	inst, err := NewInstance(InstanceOptions{})
	if err != nil {
		b.Skipf("no Vulkan: %v", err)
	}
	defer inst.Close()
	if len(inst.Devices()) == 0 {
		b.Skip("no Vulkan devices")
	}
	d, err := inst.Open(Pick(inst.Devices()))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	k, err := d.NewKernel("double_add", spv, 2, 8, []uint32{64})
	if err != nil {
		b.Fatal(err)
	}
	in, _ := d.NewBuffer("in", 256, false)
	out, _ := d.NewBuffer("out", 256, false)
	r := d.Record("bench")
	r.Dispatch(k, []Range{{Buf: in}, {Buf: out}}, push(64, 1), 1, 1, 1)
	if err := r.Finish(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Submit(r); err != nil {
			b.Fatal(err)
		}
	}
}

// A profiled recording reports one timing per non-barrier command, in
// order, with its note, and counts what it records; the results are still
// right.
func TestProfileTimings(t *testing.T) {
	spv := compileGLSL(t, testShader)
	inst, d := openDevice(t)
	if d.Info().TimestampBits == 0 {
		r := d.Record("no timers")
		if err := r.Profile(); err == nil {
			t.Fatal("Profile succeeded on a device without timestamps")
		}
		t.Skipf("%s has no timestamps on its compute queue", d.Info().Name)
	}
	const n, local = 1 << 16, 64
	k, err := d.NewKernel("double_add", spv, 2, 8, []uint32{local})
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.NewBuffer("in", 4*n, true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.NewBuffer("out", 4*n, false)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Record("profiled")
	if _, err := r.Timings(); err == nil {
		t.Error("Timings of an unfinished recording succeeded")
	}
	if err := r.Profile(); err != nil {
		t.Fatal(err)
	}
	r.Note("first", 8*n)
	r.Dispatch(k, []Range{{Buf: in}, {Buf: out}}, push(n, 1), n/local, 1, 1)
	r.Barrier()
	r.Dispatch(k, []Range{{Buf: out}, {Buf: in}}, push(n, 2), n/local, 1, 1) // no note
	r.Barrier()
	r.Note("clear", 4*n)
	r.Fill(Range{Buf: out}, 0)
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Counts(), (Counts{Dispatches: 2, Barriers: 2, Transfers: 1}); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
	for i := range n {
		binary.LittleEndian.PutUint32(in.Mapped()[4*i:], uint32(i))
	}
	if err := d.Submit(r); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, n - 1} { // in = 2·(2i+1)+2
		if got, want := binary.LittleEndian.Uint32(in.Mapped()[4*i:]), uint32(4*i+4); got != want {
			t.Fatalf("in[%d] = %d, want %d", i, got, want)
		}
	}
	tm, err := r.Timings()
	if err != nil {
		t.Fatal(err)
	}
	want := []Timing{
		{Kind: "dispatch", Kernel: "double_add", Label: "first", Groups: [3]uint32{n / local, 1, 1}, Bytes: 8 * n},
		{Kind: "dispatch", Kernel: "double_add", Label: "double_add", Groups: [3]uint32{n / local, 1, 1}},
		{Kind: "fill", Kernel: "fill", Label: "clear", Bytes: 4 * n},
	}
	if len(tm) != len(want) {
		t.Fatalf("%d timings, want %d: %+v", len(tm), len(want), tm)
	}
	var total float64
	for i := range want {
		got := tm[i]
		if got.Nanoseconds < 0 || got.Nanoseconds > 60e9 {
			t.Errorf("timing %d: %g ns", i, got.Nanoseconds)
		}
		total += got.Nanoseconds
		got.Nanoseconds = 0
		if got != want[i] {
			t.Errorf("timing %d = %+v, want %+v", i, got, want[i])
		}
	}
	if total <= 0 {
		t.Errorf("the profiled commands took %g ns in all", total)
	}
	r.Release()
	if _, err := r.Timings(); err == nil {
		t.Error("Timings of a released recording succeeded")
	}
	checkMessages(t, inst)
}
