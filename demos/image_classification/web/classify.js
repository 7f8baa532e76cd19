// Image classification in the page: EfficientNet-Lite0 run by ember in a Web Worker (WebGPU,
// else the wasm CPU kernels, else the pure-Python backend). Pick or drop an image: it is
// centre-cropped and scaled in a canvas (shorter side, 224/256 crop, as the CPython demo) and
// the top-5 labels come back. Query parameters: ?ember=<dist URL> (default: the site root)
// &model=<model folder> (default: ./model/) &backend=auto|wgpu|wasm|python &size=<input
// pixels> (default: 224, PYTHON_SIZE on the pure-Python backend) &int8 (the int8 model of
// `ember demo classify --int8`, model.json's int8_weights: fewer bytes to download).
const params = new URLSearchParams(location.search);
const EMBER = new URL(params.get("ember") ?? "../", location.href);
const MODEL = new URL(params.get("model") ?? "./model/", location.href);
const INT8 = params.has("int8") && params.get("int8") !== "0";
const PYTHON_SIZE = 96; // the pure-Python backend needs ~5x longer per image at 224 than at 96
const BACKEND_LABELS = { wasm: "CPU (wasm kernels)", python: "CPU (Python backend)" };
// The model's files download while Pyodide starts (they are handed over as bytes).
const fetchBytes = async (url) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};
const modelFiles = fetchBytes(new URL("model.json", MODEL)).then((config) => {
  const key = INT8 ? "int8_weights" : "weights"; // only the chosen weights are fetched
  const weights = JSON.parse(new TextDecoder().decode(config))[key];
  if (!weights) throw new Error(`${new URL("model.json", MODEL)} names no ${key} file`);
  return Promise.all([config, fetchBytes(new URL("labels.json", MODEL)),
                      fetchBytes(new URL(weights, MODEL))]);
});
modelFiles.catch(() => {}); // reported when awaited, after ember's start
const { loadEmber } = await import(new URL("ember.js", EMBER).href);

const $ = (id) => document.getElementById(id);
const demo = (window.classifyDemo = { ready: false, runs: 0, busy: false, last: null, error: null });
let ember = null, size = 224;

// ---------------------------------------------------------------- top-5 rows
const rows = [];
for (let i = 0; i < 5; i++) {
  const name = document.createElement("span");
  const bar = document.createElement("div");
  bar.className = "bar";
  bar.append(document.createElement("div"));
  const value = document.createElement("span");
  $("top5").append(name, bar, value);
  rows.push([name, bar, value]);
}

function show(result) {
  result.top.forEach(([label, p], i) => {
    const [name, bar, value] = rows[i];
    name.textContent = label;
    bar.firstChild.style.width = `${(100 * p).toFixed(1)}%`;
    value.textContent = `${(100 * p).toFixed(1)}%`;
    for (const el of rows[i]) el.classList.toggle("top", i === 0);
  });
  $("label").textContent = result.top[0][0];
  $("latency").textContent = `${result.ms.toFixed(0)} ms`;
}

// ---------------------------------------------------------------- preprocessing
// The centre square of side 224/256 of the shorter side, scaled to size×size: the same crop as
// resize(shorter side = size·256/224) + centre crop, in one high-quality drawImage.
function crop(bitmap) {
  const side = Math.min(bitmap.width, bitmap.height) * (224 / 256);
  const sx = (bitmap.width - side) / 2, sy = (bitmap.height - side) / 2;
  const canvas = new OffscreenCanvas(size, size);
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  ctx.drawImage(bitmap, sx, sy, side, side, 0, 0, size, size);
  const view = $("view");
  view.width = view.height = size;
  view.getContext("2d").drawImage(canvas, 0, 0);
  view.classList.remove("empty");
  $("hint").hidden = true;
  return ctx.getImageData(0, 0, size, size).data;
}

// ---------------------------------------------------------------- progress and messages
// The spinner and the phase stay visible while ember loads or classifies; the status line
// keeps the last outcome.
function working(phase) {
  $("progress").hidden = false;
  $("phase").textContent = phase;
  $("status").textContent = phase;
}
function finished(status) {
  $("progress").hidden = true;
  $("status").textContent = status;
}
const ACCEPTED = "a PNG, JPEG, GIF, WebP, AVIF or BMP image";
function reject(file, problem = `is not an image (${file.type || "unknown type"})`) {
  $("message").textContent = `"${file.name}" ${problem}: drop or pick ${ACCEPTED}.`;
}

function clearResult() {
  rows.forEach(([name, bar, value]) => {
    name.textContent = value.textContent = "";
    bar.firstChild.style.width = "0";
    for (const el of [name, bar, value]) el.classList.remove("top");
  });
  $("label").textContent = $("latency").textContent = "–";
}

// Each pick or drop starts a new run; a run that finishes after a newer one started is stale
// (the photo shown is no longer its photo) and its result is dropped.
let latestRun = 0;
async function classify(file) {
  if (!file) return;
  if (!file.type.startsWith("image/")) return reject(file);
  $("message").textContent = "";
  if (!demo.ready) return;
  const run = ++latestRun;
  const current = () => run === latestRun;
  demo.busy = true;
  working(`classifying ${file.name}…`);
  try {
    const bitmap = await createImageBitmap(file);
    if (!current()) return bitmap.close();
    clearResult(); // the previous photo's labels must not stand under this one
    const pixels = new Uint8Array(crop(bitmap).buffer);
    demo.pixels = pixels; // what the model saw (size×size RGBA), for tests
    bitmap.close();
    const t0 = performance.now();
    const result = await ember.run("classify(PIXELS, SIZE)", { PIXELS: pixels, SIZE: size });
    if (!current()) return;
    result.total_ms = performance.now() - t0;
    show(result);
    demo.last = { ...result, file: file.name };
    demo.runs++;
    finished(`${file.name}: ${result.top[0][0]} (${(100 * result.top[0][1]).toFixed(1)}%)`);
  } catch (e) {
    if (!current()) return;
    if (e.name === "InvalidStateError" || e.name === "EncodingError") {
      finished(`could not decode ${file.name}`);
      return reject(file, "could not be decoded as an image"); // typed image/*, but isn't
    }
    demo.error = String(e.message ?? e);
    finished(`error: ${demo.error}`);
  } finally {
    if (current()) demo.busy = false;
  }
}

$("file").addEventListener("change", (e) => classify(e.target.files[0]));
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const files = [...e.dataTransfer.files];
  const file = files.find((f) => f.type.startsWith("image/")) ?? files[0];
  $("file").value = ""; // the input no longer names the image shown
  classify(file);
});

// ---------------------------------------------------------------- start
try {
  ember = await loadEmber({ worker: true, baseURL: EMBER.href,
                            backend: params.get("backend") ?? "auto", onStatus: working });
  working(`loading EfficientNet-Lite0 (${INT8 ? "int8" : "float16"} weights)`);
  const code = await (await fetch(new URL("classify.py", import.meta.url))).text();
  const [config, labels, weights] = await modelFiles;
  const loaded = await ember.timed("model", ember.run(
    code + "\nload_model(CONFIG_JSON, LABELS_JSON, WEIGHTS_BYTES, INT8)",
    { CONFIG_JSON: config, LABELS_JSON: labels, WEIGHTS_BYTES: weights, INT8 }));
  const info = ember.info;
  const python = info.backend === "python";
  size = Number(params.get("size") ?? (python ? PYTHON_SIZE : 224));
  $("backend").textContent =
    info.backend === "wgpu" ? `WebGPU (${info.adapter})` : BACKEND_LABELS[info.backend];
  $("size").textContent = `${size}×${size}`;
  $("model").textContent = `${loaded.dtype}, ${(loaded.weights_bytes / 1e6).toFixed(1)} MB`;
  $("why").textContent = info.reason;
  if (size !== 224) {
    $("note").textContent = `Input ${size}×${size} instead of the model's 224×224` +
      (python ? ": the pure-Python CPU backend is slow at full size." : ".") +
      " Accuracy is a little lower.";
  }
  finished(`ready (ember started in ${(info.startup_ms / 1000).toFixed(1)} s): ` +
           "pick or drop an image");
  Object.assign(demo, { backend: info.backend, size, model: loaded, phases: info.phases,
                        ready: true });
} catch (e) {
  demo.error = String(e.message ?? e);
  finished(`error: ${demo.error}`);
}
