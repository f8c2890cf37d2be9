package vk

import "errors"

// Timing is how long one recorded command ran in the last submit.
type Timing struct {
	Kind   string    // "dispatch", "copy" or "fill"
	Kernel string    // the kernel's name (dispatch), else Kind
	Label  string    // from Note; Kernel when none was given
	Groups [3]uint32 // workgroups (dispatch)
	Bytes  int64     // from Note: the memory traffic it needs at least
	// Nanoseconds is the time from the end of the command before it to its
	// own end, from GPU timestamps at the bottom of the pipe: for commands
	// separated by barriers, the command's run time plus the barrier's
	// drain; commands with no barrier between them may overlap, and then
	// the later one is charged only for what it added.
	Nanoseconds float64
}

// Counts says what a recording submits: dispatches, barriers, and
// transfers (copies and fills).
type Counts struct {
	Dispatches, Barriers, Transfers int
}

// OpenOptions configures Instance.OpenWith.
type OpenOptions struct {
	// Surface is a window surface of the instance that the device must
	// also present to; nil: none. Its queue is then of the first queue
	// family with compute that can present there, and VK_KHR_swapchain is
	// enabled. OpenWith fails, saying so, on a device that cannot present.
	Surface *Surface
}

// SwapchainInfo describes a swapchain.
type SwapchainInfo struct {
	Width, Height int    // of its images, in pixels
	Images        int    // how many it has
	Format        uint32 // VkFormat: B8G8R8A8 or R8G8B8A8, UNORM or SRGB
	// BGRA: a pixel's bytes in memory are blue, green, red, alpha (else
	// red, green, blue, alpha).
	BGRA bool
	// Readable: its images can be copied from, so Present can read back
	// what it shows (screenshots).
	Readable bool
}

// ErrOutOfDate reports that a swapchain no longer matches its window
// (resized, or minimized to nothing): make a new one for the window's size.
var ErrOutOfDate = errors.New("vulkan: the swapchain no longer matches its window (resized or minimized)")
