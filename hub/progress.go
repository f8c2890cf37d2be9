package hub

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ProgressPrinter shows downloads on w: on a terminal one line with a bar,
// redrawn in place at most ten times a second; elsewhere (a log, a pipe) a
// line every Every. Each line has the bytes so far, the rate of this run
// and, when the size is known, the percentage and the time left.
type ProgressPrinter struct {
	w        io.Writer
	terminal bool
	// Every is the interval between lines when w is not a terminal (5 s).
	Every time.Duration
	// Now is the clock (time.Now); tests set it.
	Now func() time.Time

	mu        sync.Mutex
	file      string
	since     time.Time // when this file's download began, in this run
	base      int64     // bytes there then
	last      time.Time // when the last line was drawn
	width     int       // of the line drawn on a terminal, to blank its remains
	finalDone bool
}

// NewProgressPrinter draws on w, in place when terminal is set.
func NewProgressPrinter(w io.Writer, terminal bool) *ProgressPrinter {
	return &ProgressPrinter{w: w, terminal: terminal, Every: 5 * time.Second, Now: time.Now}
}

// Update takes a Progress, as Client.Progress.
func (p *ProgressPrinter) Update(ev Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Now()
	if ev.File != p.file || ev.Done < p.base {
		p.end()
		p.file, p.since, p.base, p.last, p.finalDone = ev.File, now, ev.Done, time.Time{}, false
	}
	complete := ev.Total >= 0 && ev.Done >= ev.Total
	every := p.Every
	if p.terminal {
		every = 100 * time.Millisecond
	}
	switch {
	case complete && p.finalDone:
		return
	case complete, p.last.IsZero(), now.Sub(p.last) >= every:
	default:
		return
	}
	p.last, p.finalDone = now, complete
	line := p.line(ev, now)
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	fmt.Fprintf(p.w, "\r%s", padRight(line, p.width))
	p.width = len(line)
}

// Println writes a line of text, first ending the progress line a terminal
// shows; the progress is drawn again on the next Update.
func (p *ProgressPrinter) Println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\n", padRight(s, p.width))
		p.width, p.last = 0, time.Time{}
		return
	}
	fmt.Fprintln(p.w, s)
}

func padRight(s string, n int) string {
	return s + strings.Repeat(" ", max(n-len(s), 0))
}

// Finish ends the line a terminal shows, so that what follows starts on a
// line of its own.
func (p *ProgressPrinter) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end()
	p.file = ""
}

func (p *ProgressPrinter) end() {
	if p.terminal && p.width > 0 {
		fmt.Fprintln(p.w)
	}
	p.width = 0
}

// line is "ORG/REPO:FILE [=====>    ] 412.3 MiB / 1.10 GiB  37%  21.4 MiB/s  ETA 33s".
func (p *ProgressPrinter) line(ev Progress, now time.Time) string {
	var b strings.Builder
	b.WriteString(ev.File)
	elapsed := now.Sub(p.since).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(ev.Done-p.base) / elapsed
	}
	if ev.Total > 0 {
		frac := min(float64(ev.Done)/float64(ev.Total), 1)
		if p.terminal {
			const bar = 24
			n := int(frac * bar)
			b.WriteString(" [" + strings.Repeat("=", n))
			if n < bar {
				b.WriteString(">" + strings.Repeat(" ", bar-n-1))
			}
			b.WriteString("]")
		}
		fmt.Fprintf(&b, " %s / %s %3.0f%%", FormatBytes(ev.Done), FormatBytes(ev.Total), 100*frac)
	} else {
		fmt.Fprintf(&b, " %s", FormatBytes(ev.Done))
	}
	if rate > 0 {
		fmt.Fprintf(&b, "  %s/s", FormatBytes(int64(rate)))
		if ev.Total > 0 && ev.Done < ev.Total {
			fmt.Fprintf(&b, "  ETA %s", formatETA(time.Duration(float64(ev.Total-ev.Done)/rate*float64(time.Second))))
		}
	}
	if ev.Total >= 0 && ev.Done >= ev.Total {
		b.WriteString("  done")
	}
	return b.String()
}

// formatETA is 33s, 4m05s or 1h02m.
func formatETA(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}
