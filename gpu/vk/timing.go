package vk

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
