//go:build cgo

package vk

import (
	"strings"
	"testing"

	vulkan "github.com/vulkan-go/vulkan"
)

// zeroSizeBuffer makes one invalid call on d, a buffer of size 0: one
// validation message, VUID-VkBufferCreateInfo-size-00912.
func zeroSizeBuffer(d *Device) {
	var buf vulkan.Buffer
	if r := vulkan.CreateBuffer(d.dev, &vulkan.BufferCreateInfo{
		SType:       vulkan.StructureTypeBufferCreateInfo,
		Size:        0,
		Usage:       vulkan.BufferUsageFlags(vulkan.BufferUsageStorageBufferBit),
		SharingMode: vulkan.SharingModeExclusive,
	}, nil, &buf); r == vulkan.Success {
		vulkan.DestroyBuffer(d.dev, buf, nil)
	}
}

// TestValidationReportsErrors makes sure the messenger really delivers: an
// invalid call (a buffer of size 0) must produce a message naming its VUID.
func TestValidationReportsErrors(t *testing.T) {
	inst, err := NewInstance(InstanceOptions{Validation: true})
	if err != nil {
		skipOrFail(t, "no Vulkan with validation: %v", err)
	}
	defer inst.Close()
	if len(inst.Devices()) == 0 {
		skipOrFail(t, "no Vulkan devices")
	}
	d, err := inst.Open(Pick(inst.Devices()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	zeroSizeBuffer(d)
	msgs := inst.Messages()
	if len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), "VUID-VkBufferCreateInfo-size") {
		t.Fatalf("no validation message for a zero-size buffer; got %q", msgs)
	}
	t.Logf("caught: %s", msgs[0])
	if again := inst.Messages(); len(again) != 0 {
		t.Errorf("Messages did not remove what it returned: %q", again)
	}
}

// TestSharedInstance: Shared makes one instance per kind of options and
// never closes it; each Listener of it reads the messages from its making
// to its Close, whoever caused them, and Messages of the instance itself
// reads none.
func TestSharedInstance(t *testing.T) {
	if k1, k2 := (InstanceOptions{Extensions: []string{"b", "a", "b"}, SyncValidation: true}).key(), (InstanceOptions{Extensions: []string{"a", "b"}}).key(); k1 != k2 {
		t.Errorf("the same instance asked for twice: keys %q and %q", k1, k2)
	}
	inst, err := Shared(InstanceOptions{Validation: true})
	if err != nil {
		skipOrFail(t, "no Vulkan with validation: %v", err)
	}
	before := InstancesCreated()
	if again, err := Shared(InstanceOptions{Validation: true}); err != nil || again != inst {
		t.Fatalf("Shared again: %p, %v; want the first, %p", again, err, inst)
	}
	if len(inst.Devices()) == 0 {
		skipOrFail(t, "no Vulkan devices")
	}
	inst.Close() // does nothing
	d, err := inst.Open(Pick(inst.Devices()))
	if err != nil {
		t.Fatalf("Open after Close on a shared instance: %v", err)
	}
	defer d.Close()
	invalid := func() { zeroSizeBuffer(d) }
	count := func(l *Listener) int {
		n := 0
		for _, m := range l.Messages() {
			if strings.Contains(m, "VUID-VkBufferCreateInfo-size") {
				n++
			}
		}
		return n
	}
	a := inst.Listen()
	invalid()
	b := inst.Listen() // after the first message
	if n, m := count(a), count(b); n != 1 || m != 0 {
		t.Fatalf("one message before the second listener: the first read %d, the second %d; want 1 and 0", n, m)
	}
	invalid()
	invalid()
	a.Close()
	invalid()
	if n, m := count(a), count(b); n != 2 || m != 3 {
		t.Errorf("two messages, the first listener closed, a third: it read %d, the other %d; want 2 and 3", n, m)
	}
	if n := count(a); n != 0 {
		t.Errorf("the closed listener read %d messages again", n)
	}
	b.Close()
	if msgs := inst.Messages(); len(msgs) != 0 {
		t.Errorf("a shared instance's own Messages returned %q", msgs)
	}
	if n := InstancesCreated() - before; n != 0 {
		t.Errorf("%d instances created by Shared with the same options", n)
	}
}
