package gpu

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn/nntest"
)

// TestManyBackends: a process opens and closes any number of backends, one
// after another and at the same time, on one VkInstance per kind (with
// validation or without): NVIDIA's driver refuses vkCreateInstance after
// about 14 in a process, closed ones included. Each backend still reports
// the validation messages since it opened.
func TestManyBackends(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 1)
	needVulkan(t)
	kinds := []Options{{Context: 8, Validation: true}, {Context: 8}}
	use := func(o Options, n int) error {
		b, err := New(m.Config, m.Weights, o)
		if err != nil {
			return err
		}
		if n%10 == 0 { // a pass now and then: the device works
			if _, err := b.ForwardArgmax([]int32{1, 2}, 0); err != nil {
				b.Close()
				return err
			}
		}
		b.Close()
		if msgs := b.ValidationMessages(); len(msgs) > 0 {
			return fmt.Errorf("validation: %q", msgs)
		}
		return nil
	}
	for _, o := range kinds { // the instances of both kinds exist from here on
		if err := use(o, 1); err != nil {
			t.Fatal(err)
		}
	}
	before := vk.InstancesCreated()
	for n := range 40 {
		if err := use(kinds[n%2], n); err != nil {
			t.Fatalf("backend %d of 40 (%+v): %v", n+1, kinds[n%2], err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for n := range 3 {
				if err := use(kinds[g%2], n); err != nil {
					errs <- fmt.Errorf("goroutine %d, backend %d: %w", g, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := vk.InstancesCreated() - before; n != 0 {
		t.Errorf("52 backends of two kinds made %d more instances, want none", n)
	}
	if n := vk.InstancesCreated(); n > len(kinds) {
		t.Errorf("this process made %d Vulkan instances; the gpu package's tests ask for %d kinds", n, len(kinds))
	}
}
