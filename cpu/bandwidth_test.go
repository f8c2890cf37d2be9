package cpu

import "testing"

// A probe measures a positive bandwidth again and again on its buffer,
// refuses bad arguments, and nothing after Close.
func TestBandwidthProbe(t *testing.T) {
	for _, bad := range [][2]int{{0, 1 << 20}, {1, 1 << 19}} {
		if _, err := NewBandwidthProbe(bad[0], bad[1]); err == nil {
			t.Errorf("NewBandwidthProbe(%d, %d) accepted", bad[0], bad[1])
		}
	}
	p, err := NewBandwidthProbe(2, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if bw, err := p.Measure(2); err != nil || !(bw > 1e8) {
			t.Errorf("Measure: %g B/s, %v", bw, err)
		}
	}
	if _, err := p.Measure(0); err == nil {
		t.Error("Measure(0) accepted")
	}
	p.Close()
	p.Close()
	if _, err := p.Measure(1); err == nil {
		t.Error("Measure after Close worked")
	}
	if bw, err := MeasureBandwidth(1, 2<<20, 1); err != nil || !(bw > 1e8) {
		t.Errorf("MeasureBandwidth: %g B/s, %v", bw, err)
	}
}
