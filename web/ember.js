// Ember in the browser: loads Pyodide from this offline distribution, installs ember's wheel
// with micropip, picks a backend (WebGPU when navigator.gpu gives an adapter, else the pure
// Python backend) and runs Python through runPythonAsync, so that synchronous GPU reads work
// through JSPI (pyodide.ffi.run_sync).
//
//   import { loadEmber } from "./ember.js";
//   const ember = await loadEmber();                  // or loadEmber({ worker: true })
//   console.log(ember.backend);                       // "wgpu" or "python"
//   const y = await ember.run("import ember\nember.arange(4).sum().item()");
//
// The same object comes back in both modes: { backend, info, run(code, globals), close() };
// with { worker: true } everything runs in ember-worker.js and the page stays responsive.

const HERE = new URL(".", import.meta.url);

function toJs(value) {
  // Python objects come back as PyProxies; hand out plain JS values (and free the proxy).
  if (value && typeof value === "object" && typeof value.toJs === "function") {
    const out = value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    value.destroy();
    return out;
  }
  return value;
}

async function startPyodide(base, status) {
  const manifest = await (await fetch(new URL("ember-dist.json", base))).json();
  const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", base).href);
  status(`loading Pyodide ${manifest.pyodide_version}`);
  const pyodide = await loadPyodide({
    indexURL: new URL("pyodide/", base).href,
    lockFileURL: new URL("pyodide/pyodide-lock.json", base).href,
  });
  status("installing ember");
  await pyodide.loadPackage("micropip", { messageCallback: () => {} });
  const micropip = pyodide.pyimport("micropip");
  await micropip.install(new URL(`pyodide/${manifest.ember_wheel}`, base).href);
  micropip.destroy();
  return { pyodide, manifest };
}

/**
 * Start Ember in this thread (default) or in a Web Worker (`{ worker: true }`).
 *
 * options.backend: "auto" (WebGPU when available, else python), "wgpu" or "python".
 * options.baseURL: where the distribution lives (default: next to this file).
 * options.onStatus: called with short progress messages.
 */
export async function loadEmber(options = {}) {
  const base = new URL(options.baseURL ?? HERE, location.href);
  const status = options.onStatus ?? (() => {});
  if (options.worker) return startWorker(base, options, status);

  const t0 = performance.now();
  const { pyodide, manifest } = await startPyodide(base, status);
  status("choosing a backend");
  pyodide.globals.set("_ember_prefer", options.backend ?? "auto");
  const info = toJs(
    await pyodide.runPythonAsync(
      "from ember.backends.wgpu.browser import init_browser\n" +
        "await init_browser(_ember_prefer)",
    ),
  );
  info.startup_ms = performance.now() - t0;
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
    close() {},
  };
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
  const opts = { backend: options.backend ?? "auto", baseURL: base.href };
  return call("init", { options: opts }).then((info) => ({
    worker,
    backend: info.backend,
    info,
    run: (code, globals = {}) => call("run", { code, globals }),
    close: () => worker.terminate(),
  }));
}
