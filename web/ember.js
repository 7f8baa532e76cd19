// Ember in the browser: loads Pyodide from this offline distribution, installs ember's wheel
// (fetched while Pyodide loads; bytecode for Pyodide's Python, no micropip), picks a backend
// (WebGPU when navigator.gpu gives an adapter, else the wasm kernels, else the pure-Python
// reference) and runs Python through runPythonAsync, so that synchronous GPU reads work
// through JSPI (pyodide.ffi.run_sync).
//
//   import { loadEmber } from "./ember.js";
//   const ember = await loadEmber();                  // or loadEmber({ worker: true })
//   console.log(ember.backend, ember.info.reason);    // "wgpu", "wasm" or "python", and why
//   const y = await ember.run("import ember\nember.arange(4).sum().item()");
//   await ember.timed("model", ember.run(...));       // a page phase, added to info.phases
//
// The same object comes back in both modes: { backend, info, run(code, globals), timed(phase,
// promise), close() }; with { worker: true } everything runs in ember-worker.js and the page
// stays responsive. info.phases holds the start-up phases in ms: pyodide (Pyodide's own
// load), install (ember's wheel), import (`import ember`), backend (the backend's start,
// including the wait for the kernels' streaming compile), then those a page adds with timed().

const HERE = new URL(".", import.meta.url);
export const BACKENDS = ["auto", "wgpu", "wasm", "python"];

function toJs(value) {
  // Python objects come back as PyProxies; hand out plain JS values (and free the proxy).
  if (value && typeof value === "object" && typeof value.toJs === "function") {
    const out = value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    value.destroy();
    return out;
  }
  return value;
}

// The wasm kernels, compiled while the bytes arrive and while Pyodide loads (the promise never
// rejects: a failure is a reason for the backend choice, not an error of the page).
const fetchWheel = (base) => async (manifest) => {
  const url = new URL(`pyodide/${manifest.ember_wheel}`, base);
  const response = await fetch(url, { integrity: manifest.ember_wheel_integrity });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
};

function compileKernels(base) {
  return WebAssembly.compileStreaming(fetch(new URL("ember.wasm", base)))
    .then((module) => ({ module, error: null }))
    .catch((e) => ({ module: null, error: `ember.wasm: ${e.message ?? e}` }));
}

/**
 * Start Ember in this thread (default) or in a Web Worker (`{ worker: true }`).
 *
 * options.backend: "auto" (WebGPU when available, else wasm, else python), "wgpu", "wasm"
 *   or "python"; a named backend that can't start is an error.
 * options.baseURL: where the distribution lives (default: next to this file).
 * options.onStatus: called with short progress messages.
 */
export async function loadEmber(options = {}) {
  const base = new URL(options.baseURL ?? HERE, location.href);
  const status = options.onStatus ?? (() => {});
  const backend = options.backend ?? "auto";
  if (!BACKENDS.includes(backend)) {
    throw new Error(`loadEmber: backend must be one of ${BACKENDS.join(", ")}, got ${backend}`);
  }
  if (options.worker) return startWorker(base, { ...options, backend }, status);

  const t0 = performance.now();
  const phases = {};
  let last = t0;
  const phase = (name) => {
    const now = performance.now();
    phases[name] = now - last;
    last = now;
  };
  // Everything that doesn't need Python starts now and overlaps Pyodide's load: the kernels'
  // streaming compile, the manifest, then ember's wheel (checked against its sha256).
  const kernels = backend === "python" ? Promise.resolve({ module: null, error: null })
    : compileKernels(base);
  const manifestLoad = fetch(new URL("ember-dist.json", base)).then((r) => r.json());
  const wheelLoad = manifestLoad.then(fetchWheel(base)).then(
    (buffer) => ({ buffer }), (error) => ({ error }));
  const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", base).href);
  const manifest = await manifestLoad;
  status(`loading Pyodide ${manifest.pyodide_version}`);
  const pyodide = await loadPyodide({
    indexURL: new URL("pyodide/", base).href,
    lockFileURL: new URL("pyodide/pyodide-lock.json", base).href,
  });
  phase("pyodide");
  status("installing ember");
  // Unpacked straight from the prefetched bytes: pyodide.loadPackage("ember") (the lock lists
  // it) would fetch it only now and costs ~90 ms more in Chromium.
  const wheel = await wheelLoad;
  if (wheel.error) throw wheel.error;
  pyodide.unpackArchive(wheel.buffer, "wheel", { extractDir: manifest.site_packages });
  phase("install");
  pyodide.runPython("import ember");
  phase("import");
  status("starting the backend");
  const { module, error } = await kernels;
  pyodide.globals.set("_ember_prefer", backend);
  pyodide.globals.set("_ember_kernels", module ?? undefined); // JS null is not None
  pyodide.globals.set("_ember_kernels_error", error ?? "");
  const info = toJs(
    await pyodide.runPythonAsync(
      "from ember.backends.browser import init_browser\n" +
        "await init_browser(_ember_prefer, _ember_kernels, _ember_kernels_error)",
    ),
  );
  pyodide.runPython("del _ember_prefer, _ember_kernels, _ember_kernels_error");
  phase("backend");
  info.startup_ms = performance.now() - t0;
  info.phases = phases;
  info.ember_version = manifest.ember_version;
  info.pyodide_version = manifest.pyodide_version;
  status(`ready: ${info.backend}`);
  return {
    pyodide,
    backend: info.backend,
    info,
    /** Run Python (top-level await allowed); `globals` are set first. Returns a JS value. */
    async run(code, globals = {}) {
      for (const [k, v] of Object.entries(globals)) pyodide.globals.set(k, v);
      return toJs(await pyodide.runPythonAsync(code));
    },
    timed: (name, promise) => timed(info, name, promise),
    close() {},
  };
}

/** Await `promise`, recording its time as info.phases[name] (ms). */
async function timed(info, name, promise) {
  const t0 = performance.now();
  try {
    return await promise;
  } finally {
    info.phases[name] = performance.now() - t0;
  }
}

function startWorker(base, options, status) {
  const worker = new Worker(new URL("ember-worker.js", base), { type: "module" });
  let next = 0;
  const pending = new Map();
  worker.onmessage = (e) => {
    const { id, result, error, status: msg } = e.data;
    if (msg !== undefined) return status(msg);
    const p = pending.get(id);
    pending.delete(id);
    if (error !== undefined) p.reject(new Error(error));
    else p.resolve(result);
  };
  worker.onerror = (e) => {
    for (const p of pending.values()) p.reject(new Error(`ember worker: ${e.message}`));
    pending.clear();
  };
  const call = (type, payload) =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, type, ...payload });
    });
  const opts = { backend: options.backend, baseURL: base.href };
  // the worker's own clock starts when it runs: count the module's start-up as well
  const t0 = performance.now();
  return call("init", { options: opts }).then((info) => {
    info.startup_ms = performance.now() - t0;
    return {
      worker,
      backend: info.backend,
      info,
      run: (code, globals = {}) => call("run", { code, globals }),
      timed: (name, promise) => timed(info, name, promise),
      close: () => worker.terminate(),
    };
  });
}
