// ctxscribe's try-it page: record or pick audio, send it with stream=true, show the
// transcript as its server-sent events arrive. No framework, no external resources.
"use strict";

const $ = (id) => document.getElementById(id);
let audio = null; // { blob, name }
let recorder = null;
let runs = 0; // sends so far, as #status's data-run (for tests and screen readers alike)

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

function setAudio(blob, name, label) {
  audio = { blob, name };
  $("audio-state").textContent = label;
  $("audio-state").dataset.ready = "true";
  $("playback").src = URL.createObjectURL(blob);
  $("playback").hidden = false;
  $("send").disabled = false;
}

function recorderType() {
  for (const type of ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"]) {
    if (window.MediaRecorder && MediaRecorder.isTypeSupported(type)) return type;
  }
  return "";
}

async function startRecording() {
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (error) {
    setStatus("error", `No microphone: ${error.message}`);
    return;
  }
  const type = recorderType();
  const chunks = [];
  recorder = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
  recorder.ondataavailable = (event) => { if (event.data.size > 0) chunks.push(event.data); };
  recorder.onstop = () => {
    stream.getTracks().forEach((track) => track.stop());
    const blob = new Blob(chunks, { type: recorder.mimeType || "audio/webm" });
    const extension = blob.type.includes("ogg") ? "ogg" : "webm";
    setAudio(blob, `recording.${extension}`, `Recorded ${(blob.size / 1024).toFixed(1)} KiB (${blob.type}).`);
    $("recording").textContent = "";
    $("record").classList.remove("on");
    $("record").disabled = false;
    recorder = null;
  };
  recorder.start(250);
  $("record").classList.add("on");
  $("record").disabled = true;
  $("stop").disabled = false;
  $("recording").textContent = "recording…";
  $("recording").dataset.state = "recording";
}

function stopRecording() {
  $("stop").disabled = true;
  $("recording").dataset.state = "stopped";
  if (recorder && recorder.state !== "inactive") recorder.stop();
}

// The messages field: a JSON array as typed, or plain text as one user message.
function messagesField(text) {
  const trimmed = text.trim();
  if (trimmed === "" || trimmed.startsWith("[")) return trimmed;
  return JSON.stringify([{ role: "user", content: trimmed }]);
}

function formFor(current) {
  const form = new FormData();
  form.append("file", current.blob, current.name);
  form.append("stream", "true");
  const fields = {
    dictionary: $("dictionary").value.trim(),
    sounds_like: $("sounds_like").value.trim(),
    messages: messagesField($("messages").value),
    languages: $("languages").value.trim(),
  };
  for (const [name, value] of Object.entries(fields)) {
    if (value !== "") form.append(name, value);
  }
  return form;
}

// Calls `onEvent` with each `data:` payload of a server-sent event stream.
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

async function send() {
  if (!audio) return;
  const headers = {};
  const key = $("key").value.trim();
  if (key) headers.Authorization = `Bearer ${key}`;
  $("send").disabled = true;
  $("status").dataset.run = String(++runs);
  $("transcript").textContent = "";
  $("timing").textContent = "";
  setStatus("sending", "Sending…");
  const started = performance.now();
  let first = null;
  const seconds = (t) => `${((t - started) / 1000).toFixed(2)} s`;
  try {
    const response = await fetch("/v1/audio/transcriptions", { method: "POST", headers, body: formFor(audio) });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      const error = body.error || {};
      throw new Error(`${response.status} ${error.code || ""}: ${error.message || response.statusText}`);
    }
    setStatus("streaming", "Transcribing…");
    let finished = false;
    await readEvents(response.body, (event) => {
      if (event.type === "transcript.text.delta") {
        if (first === null) first = performance.now();
        $("transcript").textContent += event.delta;
      } else if (event.type === "transcript.text.done") {
        finished = true;
        $("transcript").textContent = event.text;
      } else if (event.type === "error") {
        const error = event.error || {};
        throw new Error(`${error.code || "error"}: ${error.message || ""}`);
      }
    });
    if (!finished) throw new Error("the stream ended before the transcript was done");
    const now = performance.now();
    $("timing").textContent = `First text after ${first === null ? "-" : seconds(first)}, done in ${seconds(now)}.`;
    setStatus("done", "Done.");
  } catch (error) {
    $("timing").textContent = `Failed after ${seconds(performance.now())}.`;
    setStatus("error", error.message);
  } finally {
    $("send").disabled = false;
  }
}

window.addEventListener("DOMContentLoaded", () => {
  $("record").addEventListener("click", startRecording);
  $("stop").addEventListener("click", stopRecording);
  $("send").addEventListener("click", send);
  $("file").addEventListener("change", () => {
    const file = $("file").files[0];
    if (file) setAudio(file, file.name, `File ${file.name}, ${(file.size / 1024).toFixed(1)} KiB.`);
  });
  if (!window.MediaRecorder || !navigator.mediaDevices) {
    $("record").disabled = true;
    $("recording").textContent = "recording needs a secure origin (https or localhost)";
  }
});
