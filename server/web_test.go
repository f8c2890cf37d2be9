package server

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findBrowser returns the path of a Chromium, or "".
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageState is what the test reads of the page.
type pageState struct {
	Len     int    `json:"len"`     // characters in the last reply
	State   string `json:"state"`   // the last reply's data-state: streaming, done
	Replies int    `json:"replies"` // replies finished
	Deltas  int    `json:"deltas"`  // pieces of text received
	Turns   int    `json:"turns"`   // messages in the conversation
	Msgs    int    `json:"msgs"`    // messages shown
	Note    string `json:"note"`    // the last reply's note
}

const readPage = `(() => {
	const bodies = document.querySelectorAll(".msg.assistant .body");
	const last = bodies[bodies.length - 1];
	const notes = document.querySelectorAll(".msg.assistant .note");
	return {
		len: last ? last.textContent.length : 0,
		state: last ? last.dataset.state : "",
		replies: window.bitvk.replies, deltas: window.bitvk.deltas, turns: window.bitvk.turns(),
		msgs: document.querySelectorAll(".msg").length,
		note: notes.length ? notes[notes.length - 1].textContent : "",
	};
})()`

// TestWebPage drives the chat page in headless Chromium: it loads the page,
// sends a message and watches the reply stream in, takes a screenshot and
// checks it is not blank, stops a second reply, and starts over. The page
// must make no request beyond the server. Without a Chromium the test is
// skipped, unless BITVK_REQUIRE_BROWSER=1 (make test sets it). With
// BITVK_SCREENSHOT=FILE the screenshot is kept there.
func TestWebPage(t *testing.T) {
	exe := findBrowser()
	if exe == "" {
		const msg = "no Chromium on PATH (Debian: apt-get install chromium, as scripts/deps.sh does)"
		if os.Getenv("BITVK_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + "; BITVK_REQUIRE_BROWSER=1 requires the browser test")
		}
		t.Skip(msg + ": the browser test is skipped")
	}
	ts := newTestServer(t, testOptions{noEOG: true, delay: 10 * time.Millisecond, edit: func(c *Config) { c.MaxTokens = 60 }})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1000, 750))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}

	// Every request the page makes, and every exception it throws.
	var mu sync.Mutex
	var urls, exceptions []string
	var wg sync.WaitGroup
	lctx, stopListening := context.WithCancel(bctx)
	requests := chromedp.Events(lctx, network.RequestWillBeSent)
	thrown := chromedp.Events(lctx, runtime.ExceptionThrown)
	wg.Go(func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			mu.Lock()
			urls = append(urls, ev.Request.URL)
			mu.Unlock()
		}
	})
	wg.Go(func() {
		for ev, err := range thrown {
			if err != nil {
				return
			}
			mu.Lock()
			exceptions = append(exceptions, ev.ExceptionDetails.Text+" "+describeException(ev.ExceptionDetails))
			mu.Unlock()
		}
	})

	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	read := func() pageState {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[pageState](readPage))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return s
	}
	// until polls the page every 5 ms until ok, and returns every state seen.
	until := func(what string, ok func(pageState) bool) []pageState {
		t.Helper()
		var seen []pageState
		for deadline := time.Now().Add(15 * time.Second); ; {
			s := read()
			seen = append(seen, s)
			if ok(s) {
				return seen
			}
			if time.Now().After(deadline) {
				t.Fatalf("waited 15 s for %s; the page: %+v", what, s)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	do("loading the page", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.ID("input")))
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("model").textContent.includes("tiny · context 512")`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the page did not show the model: %v", err)
	}

	// A message; the reply appears piece by piece.
	do("sending a message", chromedp.SendKeys(chromedp.ID("input"), "hello"), chromedp.Click(chromedp.ID("send")))
	seen := until("the reply", func(s pageState) bool { return s.Replies == 1 })
	partial := map[int]bool{}
	for _, s := range seen {
		if s.State == "streaming" && s.Len > 0 {
			partial[s.Len] = true
		}
	}
	if len(partial) < 2 {
		t.Errorf("the reply did not stream: %d partial lengths seen", len(partial))
	}
	s := read()
	if s.Len == 0 || s.State != "done" || s.Turns != 2 || s.Deltas < 2 || !strings.Contains(s.Note, "60 tokens") || !strings.Contains(s.Note, "tok/s") {
		t.Errorf("after the reply: %+v", s)
	}
	stats, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("stats")))
	if err != nil || !strings.Contains(stats, "tok/s") {
		t.Errorf("the header shows %q (%v), want the speed in tok/s", stats, err)
	}

	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	checkNotBlank(t, shot)
	if path := os.Getenv("BITVK_SCREENSHOT"); path != "" {
		os.WriteFile(path, shot, 0o644)
	}

	// A second message, stopped while it streams: the partial reply stays
	// in the conversation, and the server stops generating.
	before := s.Deltas
	do("sending a second message", chromedp.SendKeys(chromedp.ID("input"), "and again"), chromedp.Click(chromedp.ID("send")))
	until("the second reply to begin", func(s pageState) bool { return s.Deltas >= before+2 })
	do("stopping the reply", chromedp.Click(chromedp.ID("stop")))
	until("the second reply to stop", func(s pageState) bool { return s.Replies == 2 })
	s = read()
	if s.Turns != 4 || !strings.Contains(s.Note, "stopped") {
		t.Errorf("after Stop: %+v", s)
	}
	waitMetric(t, ts, `bitvk_http_requests_total{code="499",endpoint="/v1/chat/completions"}`, 1)
	waitMetric(t, ts, `bitvk_requests_running`, 0)

	// New chat: the conversation is gone, and a message starts a new one.
	do("starting over", chromedp.Click(chromedp.ID("new")))
	if s := read(); s.Turns != 0 || s.Msgs != 0 {
		t.Errorf("after New chat: %+v", s)
	}
	do("sending a message to the new chat", chromedp.SendKeys(chromedp.ID("input"), "hi"), chromedp.Click(chromedp.ID("send")))
	until("the reply in the new chat", func(s pageState) bool { return s.Replies == 3 })
	if s := read(); s.Turns != 2 || s.Msgs != 2 {
		t.Errorf("the new chat: %+v", s)
	}

	stopListening()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(urls) < 3 {
		t.Errorf("the page made only these requests: %q", urls)
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, ts.url+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside the server", u)
		}
	}
	for _, e := range exceptions {
		t.Errorf("the page threw: %s", e)
	}
}

func describeException(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

// checkNotBlank fails unless the PNG shows something: many colours, none
// of them covering nearly all of it.
func checkNotBlank(t *testing.T, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	r := img.Bounds()
	if r.Dx() < 200 || r.Dy() < 200 {
		t.Fatalf("the screenshot is %v", r)
	}
	counts := map[[4]uint32]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := img.At(x, y)
			r, g, b, a := c.RGBA()
			counts[[4]uint32{r, g, b, a}]++
		}
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	total := r.Dx() * r.Dy()
	if len(counts) < 20 || float64(most)/float64(total) > 0.97 {
		t.Errorf("the screenshot looks blank: %d colours, the commonest covers %.1f%%", len(counts), 100*float64(most)/float64(total))
	}
}
