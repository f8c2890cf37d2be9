//go:build !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Name returns the CPU's name as its vendor writes it (the CPUID brand
// string, e.g. "AMD EPYC 9B45") with the vendor, family and model
// ("AuthenticAMD family 0x1a model 0x2"), which tell apart the machines a
// brand string names alike (a VM's "Intel(R) Xeon(R) Processor"): what a
// speed measured on this machine belongs to.
func Name() string {
	vendor, family := cpuVendorFamily()
	a, _, _, _ := cpuid(1, 0)
	model := a >> 4 & 0xF
	if family == 6 || family >= 0xF {
		model |= (a >> 16 & 0xF) << 4
	}
	id := fmt.Sprintf("%s family %#x model %#x", vendor, family, model)
	if top, _, _, _ := cpuid(0x80000000, 0); top < 0x80000004 {
		return id
	}
	var b [48]byte
	for i := range 3 {
		a, bx, c, d := cpuid(0x80000002+uint32(i), 0)
		for j, v := range []uint32{a, bx, c, d} {
			binary.LittleEndian.PutUint32(b[16*i+4*j:], v)
		}
	}
	brand := strings.Join(strings.Fields(strings.TrimRight(string(b[:]), "\x00")), " ")
	if brand == "" {
		return id
	}
	return brand + " (" + id + ")"
}
