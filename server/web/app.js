// bitvk's chat page: the conversation lives here and is sent whole with each
// message to /v1/chat/completions (the server reuses the K/V cache of the
// part it has seen); replies stream in as Server-Sent Events. No library,
// no build step, no request to anywhere but this server.
"use strict";

const $ = (id) => document.getElementById(id);

const state = {
  messages: [],      // the conversation: {role, content}, user and assistant turns
  controller: null,  // aborts the reply being streamed
};

// What a test can watch: pieces of text received, replies finished, the
// length of the conversation.
window.bitvk = { deltas: 0, replies: 0, turns: () => state.messages.length };

const emptyNote = $("empty"); // the hint shown while the conversation is empty

const saved = ["system", "temperature", "max-tokens", "api-key"];

function loadSettings() {
  for (const id of saved) {
    const v = localStorage.getItem("bitvk." + id);
    if (v !== null) $(id).value = v;
    $(id).addEventListener("change", () => localStorage.setItem("bitvk." + id, $(id).value));
  }
}

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

function showSettings(open) {
  $("settings").hidden = !open;
  $("settings-toggle").setAttribute("aria-expanded", String(open));
}

async function loadModel() {
  try {
    const r = await fetch("v1/models", { headers: headers() });
    if (r.status === 401) {
      $("model").textContent = "this server needs an API key: enter it in Settings";
      showSettings(true);
      return;
    }
    const m = (await r.json()).data[0];
    let text = m.id + " · context " + m.meta.context;
    if (m.meta.backend) text += " · " + m.meta.backend;
    $("model").textContent = text;
  } catch (e) {
    $("model").textContent = "the server cannot be reached";
  }
}

function scrollDown() {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
}

// bubble adds a message to the page and returns its body element.
function bubble(role, text) {
  emptyNote.remove();
  const div = document.createElement("div");
  div.className = "msg " + role;
  const who = document.createElement("div");
  who.className = "who";
  who.textContent = role === "user" ? "You" : "Assistant";
  const body = document.createElement("div");
  body.className = "body";
  body.textContent = text;
  div.append(who, body);
  $("log").append(div);
  scrollDown();
  return body;
}

function note(body, text, isError) {
  const n = document.createElement("div");
  n.className = "note" + (isError ? " error" : "");
  n.textContent = text;
  body.parentElement.append(n);
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
}

function request() {
  const msgs = [];
  const system = $("system").value.trim();
  if (system) msgs.push({ role: "system", content: system });
  const req = { messages: msgs.concat(state.messages), stream: true, stream_options: { include_usage: true } };
  const temp = parseFloat($("temperature").value);
  if (!Number.isNaN(temp)) req.temperature = temp;
  const max = parseInt($("max-tokens").value, 10);
  if (max > 0) req.max_tokens = max;
  return req;
}

// events yields the data of each Server-Sent Event of a response.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) yield data;
    }
  }
}

async function send(text) {
  state.messages.push({ role: "user", content: text });
  bubble("user", text);
  const body = bubble("assistant", "");
  body.dataset.state = "streaming";
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  $("stats").textContent = "";

  let reply = "", pieces = 0, first = 0, finish = "", timings = null, usage = null, failure = null;
  try {
    const r = await fetch("v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(request()), signal: controller.signal,
    });
    if (!r.ok) {
      const j = await r.json().catch(() => null);
      throw new Error(j && j.error ? j.error.message : r.status + " " + r.statusText);
    }
    for await (const data of events(r)) {
      if (data === "[DONE]") break;
      const j = JSON.parse(data);
      if (j.error) throw new Error(j.error.message);
      if (j.usage) usage = j.usage;
      if (j.timings) timings = j.timings;
      const c = j.choices && j.choices[0];
      if (!c) continue;
      if (c.delta && c.delta.content) {
        if (!first) first = performance.now();
        reply += c.delta.content;
        pieces++;
        window.bitvk.deltas++;
        body.textContent = reply;
        const secs = (performance.now() - first) / 1000;
        if (secs > 0.2) $("stats").textContent = (pieces / secs).toFixed(1) + " tok/s";
        scrollDown();
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  } catch (e) {
    if (e.name === "AbortError") finish = "stopped";
    else failure = e;
  }
  if (state.controller !== controller) return; // "New chat" came in between
  state.controller = null;
  body.dataset.state = "done";
  setBusy(false);

  if (failure && !reply) {
    state.messages.pop(); // not sent: the conversation stays as it was
    note(body, "error: " + failure.message, true);
    body.parentElement.previousElementSibling?.classList.add("unsent");
  } else {
    state.messages.push({ role: "assistant", content: reply });
    if (failure) note(body, "error: " + failure.message, true);
  }
  const parts = [];
  const n = usage ? usage.completion_tokens : timings ? timings.predicted_n : pieces;
  if (n) parts.push(n + " tokens");
  if (timings && timings.predicted_per_second) parts.push(timings.predicted_per_second.toFixed(1) + " tok/s");
  else if (first && pieces > 1) parts.push((pieces / ((performance.now() - first) / 1000)).toFixed(1) + " tok/s");
  $("stats").textContent = parts.join(" · ");
  if (finish === "length") parts.push("cut at the length limit");
  if (finish === "stopped") parts.push("stopped");
  if (parts.length) note(body, parts.join(" · "), false);
  window.bitvk.replies++;
  scrollDown();
}

function stop() {
  if (state.controller) state.controller.abort();
}

function newChat() {
  const c = state.controller;
  state.controller = null;
  if (c) c.abort();
  state.messages = [];
  $("log").replaceChildren(emptyNote);
  $("stats").textContent = "";
  setBusy(false);
  $("input").focus();
}

function submit(ev) {
  ev.preventDefault();
  const text = $("input").value.trim();
  if (!text || state.controller) return;
  $("input").value = "";
  send(text);
}

loadSettings();
$("composer").addEventListener("submit", submit);
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) submit(ev);
});
$("stop").addEventListener("click", stop);
$("new").addEventListener("click", newChat);
$("settings-toggle").addEventListener("click", () => showSettings($("settings").hidden));
$("api-key").addEventListener("change", loadModel);
loadModel();
