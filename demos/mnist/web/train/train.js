// Train the MNIST CNN in the page: ember's Learner (Autodiff over WebGPU, else the wasm
// kernels, else the Python backend) runs `await learner.fit_async(...)` in ember's Web Worker,
// so this page stays responsive; progress comes back as status messages and draws the curves.
// Then the drawing pad predicts with the trained weights, and Download saves them as an ember
// record (ember.save: safetensors with the config in its header; ember.load reads it).
// Query parameters: ?ember=<dist URL> (default: the site root) &data=<folder of the digits'
// IDX files + digits.json> (default ./data/) &backend=auto|wgpu|wasm|python &train=<digits>
// &test=<held-out digits> &epochs= &batch= &lr= &every=<steps per curve point> &seed=
// &jit=0|1 (default: where the backend benefits) &autostart=1.
import { drawingPad, toMnist } from "../pad.js";

const params = new URLSearchParams(location.search);
const EMBER = new URL(params.get("ember") ?? "../../", location.href);
const DATA = new URL(params.get("data") ?? "./data/", location.href);
const $ = (id) => document.getElementById(id);
const page = (window.trainDemo = {
  ready: false, running: false, done: false, backend: null, points: [], epochs: [],
  result: null, error: null, predictions: 0, last: null,
});

const fetchBytes = async (url) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};
// the digits download while Pyodide starts
const digits = fetch(new URL("digits.json", DATA)).then(async (r) => {
  if (!r.ok) throw new Error(`${r.url}: HTTP ${r.status} (build the data: ember demo mnist --serve-train)`);
  const manifest = await r.json();
  const bytes = await Promise.all(manifest.files.map((f) => fetchBytes(new URL(f, DATA))));
  return { manifest, files: Object.fromEntries(manifest.files.map((f, i) => [f, bytes[i]])) };
});
digits.catch(() => {});
const code = Promise.all(["../predict.py", "train.py"].map(
  (f) => fetch(new URL(f, import.meta.url)).then((r) => r.text())));
const { loadEmber } = await import(new URL("ember.js", EMBER).href);

for (const [id, key] of [["n-train", "train"], ["epochs", "epochs"], ["batch", "batch"]]) {
  if (params.has(key)) $(id).value = params.get(key);
}

// ---------------------------------------------------------------- curves
const curves = $("curves");
function draw() {
  const c = curves.getContext("2d");
  const { width: w, height: h } = curves;
  const pad = 40;
  c.clearRect(0, 0, w, h);
  c.strokeStyle = "#ddd";
  c.fillStyle = "#777";
  c.font = "20px system-ui";
  for (let i = 0; i <= 4; i++) {
    const y = pad + ((h - 2 * pad) * i) / 4;
    c.beginPath(); c.moveTo(pad, y); c.lineTo(w - pad, y); c.stroke();
    c.fillText((1 - i / 4).toFixed(2), 2, y + 6);
  }
  const total = Math.max(1, page.totalSteps ?? 1);
  const x = (step) => pad + ((w - 2 * pad) * step) / total;
  const y = (v) => pad + (h - 2 * pad) * (1 - Math.max(0, Math.min(1, v)));
  const maxLoss = Math.max(2.5, ...page.points.map((p) => p.loss ?? 0));
  const line = (color, value) => {
    c.strokeStyle = color; c.lineWidth = 3; c.beginPath();
    page.points.forEach((p, i) => (i ? c.lineTo : c.moveTo).call(c, x(p.total), y(value(p))));
    c.stroke();
  };
  line("#e4572e", (p) => (p.loss ?? 0) / maxLoss); // loss scaled to the axis
  line("#3a7bd5", (p) => p.accuracy ?? 0);
  c.fillStyle = "#2a9d55";
  for (const e of page.epochs.filter((e) => e.split === "valid")) {
    c.beginPath(); c.arc(x(e.total), y(e.accuracy), 7, 0, 2 * Math.PI); c.fill();
  }
}

function onProgress(msg) {
  if (msg.train === "start") {
    page.totalSteps = msg.epochs * msg.steps;
    $("progress").max = page.totalSteps;
  } else if (msg.train === "step") {
    page.points.push(msg);
    $("progress").value = msg.total;
    $("step").textContent = `${msg.total}/${page.totalSteps} (epoch ${msg.epoch})`;
    $("rate").textContent = (msg.total / msg.seconds).toFixed(1);
    $("status").textContent = `training: loss ${msg.loss.toFixed(3)}, accuracy ${(100 * msg.accuracy).toFixed(1)} %`;
    draw();
  } else if (msg.train === "epoch") {
    page.epochs.push(msg);
    if (msg.split === "valid") $("held").textContent = `${(100 * msg.accuracy).toFixed(2)} %`;
    draw();
  } else if (msg.train === "message") {
    $("status").textContent = msg.text;
  }
}

// ---------------------------------------------------------------- the drawing pad
const pad = $("pad");
let busy = false, again = false;
async function predict() {
  if (!page.done) return;
  if (busy) { again = true; return; }
  const pixels = toMnist(pad);
  if (!pixels) return;
  busy = true;
  try {
    const result = await ember.run("await predict_async(PIXELS)", { PIXELS: Array.from(pixels) });
    $("guess").textContent = result.probs.indexOf(Math.max(...result.probs));
    page.last = { ...result, input: Array.from(pixels) };
    page.predictions++;
  } catch (e) {
    fail(e);
  } finally {
    busy = false;
    if (again) { again = false; predict(); }
  }
}
drawingPad(pad, predict);
$("clear").onclick = () => {
  const c = pad.getContext("2d");
  c.fillStyle = "#000";
  c.fillRect(0, 0, pad.width, pad.height);
  $("guess").textContent = "–";
};
$("clear").onclick();

// ---------------------------------------------------------------- train, stop, download
function fail(e) {
  page.error = String(e.message ?? e);
  $("status").textContent = `error: ${page.error}`;
}
const number = (key, fallback) => Number(params.get(key) ?? fallback);

async function train() {
  $("train").disabled = true;
  $("stop").disabled = false;
  page.running = true;
  page.points = [];
  page.epochs = [];
  const options = {
    train: Number($("n-train").value), test: number("test", 1e9), epochs: Number($("epochs").value),
    batch: Number($("batch").value), lr: number("lr", 2e-3), every: number("every", 5),
    seed: number("seed", 0),
  };
  // no key: the Learner's default (JS null would reach Python as jsnull, not None)
  if (params.has("jit")) options.jit = params.get("jit") !== "0";
  try {
    page.result = await ember.run("await train(OPTIONS)", { OPTIONS: options });
    const r = page.result;
    $("status").textContent = `${r.interrupted ? "stopped" : "done"}: ${r.epochs_run} epoch(s) in ` +
      `${r.seconds.toFixed(1)} s, held-out accuracy ${r.heldout_accuracy === null ? "–"
        : `${(100 * r.heldout_accuracy).toFixed(2)} %`}: draw a digit`;
    page.done = true;
    pad.classList.remove("off");
    $("download").disabled = false;
  } catch (e) {
    fail(e);
  } finally {
    page.running = false;
    $("train").disabled = false;
    $("stop").disabled = true;
  }
}

async function download() {
  const bytes = await ember.run("await record()");
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  a.download = "mnist-cnn.safetensors";
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

$("train").onclick = train;
// handled by the worker while the training awaits between two steps
$("stop").onclick = () => ember.run("stop()").catch(fail);
$("download").onclick = () => download().catch(fail);
/** The trained model's probabilities for the first `count` held-out digits (the tests). */
page.heldOutPredictions = (count) => ember.run(`await predictions(${Number(count)})`);

// ---------------------------------------------------------------- start
const BACKEND_LABELS = { wasm: "CPU (wasm kernels)", python: "CPU (Python backend)" };
let ember = null;
try {
  ember = await loadEmber({
    worker: true, baseURL: EMBER.href, backend: params.get("backend") ?? "auto",
    onStatus: (msg) => (typeof msg === "string" ? ($("status").textContent = msg) : onProgress(msg)),
  });
  const [{ manifest, files }, [predictPy, trainPy]] = await Promise.all([digits, code]);
  await ember.run(predictPy);
  await ember.run(trainPy);
  const sizes = await ember.run("store_digits(FILES)", { FILES: files });
  $("n-train").max = sizes.train;
  const info = ember.info;
  page.backend = info.backend;
  $("backend").textContent = info.backend === "wgpu" ? `WebGPU (${info.adapter})` : BACKEND_LABELS[info.backend];
  $("why").textContent = info.reason ? `(${info.reason})` : "";
  $("status").textContent = `ready: ${sizes.train} training digits, ${sizes.test} held-out ` +
    `(${manifest.source}); press Train`;
  $("train").disabled = false;
  page.ready = true;
  if (params.get("autostart") === "1") train();
} catch (e) {
  fail(e);
}
