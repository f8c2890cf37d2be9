//go:build cgo

package vk

import (
	"strings"
	"testing"

	vulkan "github.com/vulkan-go/vulkan"
)

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
	var buf vulkan.Buffer
	if r := vulkan.CreateBuffer(d.dev, &vulkan.BufferCreateInfo{
		SType:       vulkan.StructureTypeBufferCreateInfo,
		Size:        0,
		Usage:       vulkan.BufferUsageFlags(vulkan.BufferUsageStorageBufferBit),
		SharingMode: vulkan.SharingModeExclusive,
	}, nil, &buf); r == vulkan.Success {
		vulkan.DestroyBuffer(d.dev, buf, nil)
	}
	msgs := inst.Messages()
	if len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), "VUID-VkBufferCreateInfo-size") {
		t.Fatalf("no validation message for a zero-size buffer; got %q", msgs)
	}
	t.Logf("caught: %s", msgs[0])
	if again := inst.Messages(); len(again) != 0 {
		t.Errorf("Messages did not remove what it returned: %q", again)
	}
}
