//go:build cgo

package vk

import (
	"slices"
	"strings"
	"sync"
)

// The process's shared instances, one per distinct InstanceOptions (see
// Shared).
var shared struct {
	mu    sync.Mutex
	byKey map[string]*Instance
}

// Shared returns the process's instance for options o: made by the first
// call with these options and handed to every later one, from any
// goroutine. It is kept for the life of the process, never destroyed (its
// Close does nothing): NVIDIA's driver (580) refuses vkCreateInstance after
// about 14 instances in one process, destroyed ones included, so a program
// that opens and closes backends again and again (tests, a server) must not
// make an instance for each; an idle instance holds no device memory. Its
// users close the devices they open and release the surfaces they adopt;
// each reads the validation messages that concern it through a Listener of
// its own. A failure is not remembered: the next call tries again.
func Shared(o InstanceOptions) (*Instance, error) {
	key := o.key()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if i := shared.byKey[key]; i != nil {
		return i, nil
	}
	i, err := createInstance(o, false)
	if err != nil {
		return nil, err
	}
	i.shared = true
	if shared.byKey == nil {
		shared.byKey = map[string]*Instance{}
	}
	shared.byKey[key] = i
	return i, nil
}

// key identifies what an instance made with o can do: the same key, the
// same instance. SyncValidation counts only with Validation, and the
// extensions in any order.
func (o InstanceOptions) key() string {
	exts := slices.Clone(o.Extensions)
	slices.Sort(exts)
	exts = slices.Compact(exts)
	var b strings.Builder
	if o.Validation {
		b.WriteString("validation ")
		if o.SyncValidation {
			b.WriteString("sync ")
		}
	}
	b.WriteString(strings.Join(exts, " "))
	return b.String()
}

// A Listener receives the validation messages of an instance (made with
// InstanceOptions.Validation) from the moment it is made until its Close:
// how one of several users of a shared instance reads what concerns it.
// Messages are handed out as the instance receives them (the layer reports
// a call while it is made, on the calling goroutine), so a message reaches
// every listener open when the call that caused it was made, and no other;
// one made while no listener is open goes to the next one made. Users that
// work at the same time each read all of their messages; none is lost, but
// one user's may show up in another's.
type Listener struct {
	inst    *Instance
	pending []string // received, not read yet
	closed  bool
}

// Listen returns a new listener of the instance's messages: those received
// from now on, and those received while no listener was open.
func (i *Instance) Listen() *Listener {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.drainLocked() // what came before goes to the listeners open then
	l := &Listener{inst: i, pending: i.orphans, closed: i.closed}
	i.orphans = nil
	if !i.closed {
		i.listeners = append(i.listeners, l)
	}
	return l
}

// Messages returns the messages received since the last call (or since the
// listener was made) and forgets them. It is safe to call from any
// goroutine, also after Close, which keeps what was received until then.
func (l *Listener) Messages() []string {
	if l == nil {
		return nil
	}
	i := l.inst
	i.mu.Lock()
	defer i.mu.Unlock()
	if !l.closed {
		i.drainLocked()
	}
	out := l.pending
	l.pending = nil
	return out
}

// Close stops the listener: messages received from then on are not kept
// for it. Closing twice is safe.
func (l *Listener) Close() {
	if l == nil {
		return
	}
	i := l.inst
	i.mu.Lock()
	defer i.mu.Unlock()
	if l.closed {
		return
	}
	i.drainLocked()
	l.closed = true
	i.listeners = slices.DeleteFunc(i.listeners, func(o *Listener) bool { return o == l })
}
