package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bitvk/bitvk/hub"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func mib(n float64) int64                    { return int64(n * (1 << 20)) }
func progress(done, total int64) hub.Progress {
	return hub.Progress{File: "org/repo:m.gguf", Done: done, Total: total}
}

func TestProgressLog(t *testing.T) {
	var b strings.Builder
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	p := hub.NewProgressPrinter(&b, false)
	p.Now = clock.now
	p.Update(progress(0, mib(100)))
	for i := 1; i <= 100; i++ { // 1 MiB every 100 ms: 10 MiB/s
		clock.advance(100 * time.Millisecond)
		p.Update(progress(mib(float64(i)), mib(100)))
	}
	p.Finish()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// the first, one every 5 s of the 10 s, and the last
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), b.String())
	}
	if want := "org/repo:m.gguf 50.0 MiB / 100.0 MiB  50%  10.0 MiB/s  ETA 5s"; lines[1] != want {
		t.Errorf("middle line %q, want %q", lines[1], want)
	}
	if !strings.HasSuffix(lines[2], "100%  10.0 MiB/s  done") {
		t.Errorf("last line %q", lines[2])
	}
	if strings.Contains(b.String(), "\r") {
		t.Error("carriage returns in a log")
	}
}

func TestProgressTerminal(t *testing.T) {
	var b strings.Builder
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	p := hub.NewProgressPrinter(&b, true)
	p.Now = clock.now
	// A resumed download: the rate counts only this run's bytes.
	p.Update(hub.Progress{File: "org/repo:m.gguf", Done: mib(512), Total: mib(1024), Start: mib(512)})
	clock.advance(50 * time.Millisecond)
	p.Update(hub.Progress{File: "org/repo:m.gguf", Done: mib(513), Total: mib(1024), Start: mib(512)}) // too soon: not drawn
	clock.advance(1950 * time.Millisecond)
	p.Update(hub.Progress{File: "org/repo:m.gguf", Done: mib(768), Total: mib(1024), Start: mib(512)})
	p.Finish()
	out := b.String()
	if n := strings.Count(out, "\r"); n != 2 {
		t.Errorf("%d redraws, want 2: %q", n, out)
	}
	if !strings.Contains(out, "[==================>     ] 768.0 MiB / 1.00 GiB  75%  128.0 MiB/s  ETA 2s") {
		t.Errorf("no bar with the rate of this run in %q", out)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Error("Finish did not end the line")
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", mib(412.3): "412.3 MiB", 1181116006: "1.10 GiB", 50 << 30: "50.0 GiB"} {
		if got := hub.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A note during a download ends the bar's line instead of running into it.
func TestProgressNoteOnTerminal(t *testing.T) {
	var b strings.Builder
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	p := hub.NewProgressPrinter(&b, true)
	p.Now = clock.now
	p.Update(progress(mib(1), mib(4)))
	p.Println("bitvk: the download broke off")
	p.Update(progress(mib(1), mib(4))) // drawn again at once, on a line of its own
	p.Finish()
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "25%\rbitvk: the download broke off") || lines[2] != "" {
		t.Fatalf("the note does not replace the bar's line: %q", b.String())
	}
	if !strings.HasPrefix(lines[1], "\rorg/repo:m.gguf [======>") {
		t.Errorf("the bar is not drawn again after the note: %q", lines[1])
	}
}
