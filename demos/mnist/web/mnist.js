// MNIST drawing demo: draw on the canvas, the model (ember in a Web Worker: WebGPU, else the
// wasm CPU kernels, else the Python reference backend) predicts live. Query parameters:
// ?ember=<dist URL> (default: the site root) &model=<folder with model.safetensors +
// model.json> (default: ./model/) &backend=auto|wgpu|wasm|python &jit=0 (every op eagerly;
// default: the forward through ember.jit) &remote=ws://host:8760&token=T (the model runs on
// an `ember serve` server, through the browser's WebSocket) &int8 (the int8 model,
// model_int8.safetensors from `ember demo mnist --int8`: ~4x fewer bytes to download).
import { drawingPad, toMnist } from "./pad.js";

const params = new URLSearchParams(location.search);
const EMBER = new URL(params.get("ember") ?? "../", location.href);
const MODEL = new URL(params.get("model") ?? "./model/", location.href);
const REMOTE = params.get("remote");
const INT8 = params.has("int8") && params.get("int8") !== "0";
// The model's files download while Pyodide starts (they are handed over as bytes).
const fetchBytes = async (url) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};
const modelFiles = Promise.all(
  ["model.json", INT8 ? "model_int8.safetensors" : "model.safetensors"].map(
    (name) => fetchBytes(new URL(name, MODEL))));
modelFiles.catch(() => {}); // reported when awaited, after ember's start
const { loadEmber } = await import(new URL("ember.js", EMBER).href);
const BACKEND_LABELS = { wasm: "CPU (wasm kernels)", python: "CPU (Python backend)" };

const $ = (id) => document.getElementById(id);
const pad = $("pad");
const ctx = pad.getContext("2d", { willReadFrequently: true });
const demo = (window.mnistDemo = { ready: false, predictions: 0, last: null, error: null });

// ---------------------------------------------------------------- probability bars
const bars = [];
for (let d = 0; d < 10; d++) {
  const label = document.createElement("span");
  label.textContent = d;
  const bar = document.createElement("div");
  bar.className = "bar";
  bar.append(document.createElement("div"));
  const value = document.createElement("span");
  value.textContent = "–";
  $("bars").append(label, bar, value);
  bars.push({ label, bar, value });
}

function show(result) {
  const best = result.probs.indexOf(Math.max(...result.probs));
  result.probs.forEach((p, d) => {
    bars[d].bar.firstChild.style.width = `${(100 * p).toFixed(1)}%`;
    bars[d].value.textContent = `${(100 * p).toFixed(1)}%`;
    for (const el of [bars[d].label, bars[d].bar, bars[d].value]) {
      el.classList.toggle("top", d === best);
    }
  });
  $("guess").textContent = best;
  $("latency").textContent = `${result.ms.toFixed(1)} ms`;
}

function clearAll() {
  ctx.fillStyle = "#000";
  ctx.fillRect(0, 0, pad.width, pad.height);
  $("input28").getContext("2d").clearRect(0, 0, 28, 28);
  bars.forEach((b) => { b.bar.firstChild.style.width = "0"; b.value.textContent = "–"; });
  $("guess").textContent = "–";
  demo.last = null;
}

function preview(pixels) {
  const c = $("input28").getContext("2d");
  const image = c.createImageData(28, 28);
  pixels.forEach((v, i) => image.data.set([v, v, v, 255], 4 * i));
  c.putImageData(image, 0, 0);
}

// ---------------------------------------------------------------- live prediction
let ember = null, busy = false, again = false;
demo.idle = () => !busy && !again;

async function predict() {
  if (!demo.ready) return;
  if (busy) { again = true; return; }
  const pixels = toMnist(pad);
  if (!pixels) return;
  busy = true;
  try {
    preview(pixels);
    const result = await ember.run("predict(PIXELS)", { PIXELS: Array.from(pixels) });
    show(result);
    demo.last = { ...result, input: Array.from(pixels) };
    demo.predictions++;
  } catch (e) {
    demo.error = String(e.message ?? e);
    $("status").textContent = `error: ${demo.error}`;
  } finally {
    busy = false;
    if (again) { again = false; predict(); }
  }
}

// ---------------------------------------------------------------- drawing (mouse + touch)
drawingPad(pad, predict);
$("clear").onclick = clearAll;
clearAll();

// ---------------------------------------------------------------- start
// The spinner and the phase show while ember loads (predictions take milliseconds).
function working(phase) {
  $("phase").textContent = $("status").textContent = phase;
}
function finished(status) {
  $("progress").hidden = true;
  $("status").textContent = status;
}
try {
  ember = await loadEmber({ worker: true, baseURL: EMBER.href, backend: params.get("backend") ?? "auto", onStatus: working });
  working("loading the model");
  const code = await (await fetch(new URL("predict.py", import.meta.url))).text();
  const jit = params.get("jit") !== "0"; // ?jit=0: every op eagerly
  const [config, weights] = await modelFiles;
  const connect = REMOTE ? "\nawait connect_remote(REMOTE_URL, REMOTE_TOKEN)\n" : "\n";
  const loaded = await ember.timed("model", ember.run(
    code + connect + "load_model(CONFIG, WEIGHTS, JIT, INT8)",
    { CONFIG: config, WEIGHTS: weights, JIT: jit, INT8, REMOTE_URL: REMOTE,
      REMOTE_TOKEN: params.get("token") ?? "" }));
  // the first call traces the forward (ember.jit), the second is its first replay
  await ember.timed("first_inference", ember.run("predict([0] * 784)"));
  demo.firstInferenceAt = performance.now(); // ms since the page's navigation began
  if (jit) await ember.timed("warm_up", ember.run("predict([0] * 784)"));
  const info = ember.info;
  $("backend").textContent = REMOTE
    ? `Remote: ${loaded.backend.replace(/^remote-/, "")} at ${REMOTE}`
    : info.backend === "wgpu" ? `WebGPU (${info.adapter})` : BACKEND_LABELS[info.backend];
  $("why").textContent = REMOTE ? "" : info.reason;
  finished(`ready (${loaded.dataset} model, ember started in ${(info.startup_ms / 1000).toFixed(1)} s): draw a digit`);
  demo.backend = REMOTE ? loaded.backend : info.backend;
  demo.phases = info.phases;
  demo.jit = loaded.jit;
  demo.int8 = loaded.int8;
  demo.modelBytes = weights.byteLength;
  demo.ready = true;
} catch (e) {
  demo.error = String(e.message ?? e);
  finished(`error: ${demo.error}`);
}
