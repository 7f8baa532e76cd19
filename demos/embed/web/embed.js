// Semantic search in the page: all-MiniLM-L6-v2 run by ember in a Web Worker (ember's wasm
// kernels by default, or the pure-Python backend). The sentences are embedded once; each
// query is embedded and the sentences are ranked by cosine similarity.
// Query parameters: ?ember=<dist URL> (default: the site root) &model=<model folder>
// (default: ./model/) &backend=wasm|python|wgpu|auto (default wasm) &q=<a query to run at once>
const params = new URLSearchParams(location.search);
const EMBER = new URL(params.get("ember") ?? "../", location.href);
const MODEL = new URL(params.get("model") ?? "./model/", location.href);
const { loadEmber } = await import(new URL("ember.js", EMBER).href);

const $ = (id) => document.getElementById(id);
const demo = (window.embedDemo = { ready: false, runs: 0, busy: false, last: null, error: null });
let ember = null;

function working(phase) {
  $("progress").hidden = false;
  $("phase").textContent = phase;
  $("status").textContent = phase;
}
function finished(status) {
  $("progress").hidden = true;
  $("status").textContent = status;
}

function show(result) {
  const rows = result.ranked.flatMap(([sentence, score], i) => {
    const text = document.createElement("span");
    text.textContent = sentence;
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.append(document.createElement("div"));
    bar.firstChild.style.width = `${(100 * Math.max(score, 0)).toFixed(1)}%`;
    const value = document.createElement("span");
    value.textContent = score.toFixed(3);
    if (i === 0) for (const el of [text, bar, value]) el.classList.add("best");
    return [text, bar, value];
  });
  $("ranked").replaceChildren(...rows);
  $("tokens").textContent = `query tokens: ${result.tokens.join(" ")}`;
  $("latency").textContent = `${result.ms.toFixed(0)} ms` +
    (result.embedded ? ` (with ${result.embedded} new sentences)` : "");
}

// A query typed while another runs waits for it; only the latest query's result is shown.
let latest = 0;
async function search(event) {
  event?.preventDefault();
  const query = $("query").value.trim();
  const sentences = $("sentences").value.split("\n").map((s) => s.trim()).filter(Boolean);
  if (!demo.ready) return;
  if (!query || !sentences.length) {
    $("message").textContent = query ? "Add at least one sentence to search." : "Type a query.";
    return;
  }
  $("message").textContent = "";
  const run = ++latest;
  demo.busy = true;
  working(`searching ${sentences.length} sentences…`);
  try {
    const result = await ember.run("search(QUERY, SENTENCES)", { QUERY: query, SENTENCES: sentences });
    if (run !== latest) return;
    show(result);
    demo.last = { ...result, query };
    demo.runs++;
    finished(`best match: ${result.ranked[0][0]} (${result.ranked[0][1].toFixed(3)})`);
  } catch (e) {
    if (run !== latest) return;
    demo.error = String(e.message ?? e);
    finished(`error: ${demo.error}`);
  } finally {
    if (run === latest) demo.busy = false;
  }
}
$("search").addEventListener("submit", search);

try {
  ember = await loadEmber({ worker: true, baseURL: EMBER.href,
                            backend: params.get("backend") ?? "wasm", onStatus: working });
  working("loading all-MiniLM-L6-v2 (91 MB of float32 weights)");
  const code = await (await fetch(new URL("embed.py", import.meta.url))).text();
  const loaded = await ember.run(code + "\nawait load_model(MODEL_BASE)", { MODEL_BASE: MODEL.href });
  const info = ember.info;
  $("backend").textContent = { wasm: "CPU (wasm kernels)", python: "CPU (Python backend)",
                               wgpu: `WebGPU (${info.adapter})` }[info.backend] ?? info.backend;
  $("why").textContent = info.reason;
  Object.assign(demo, { backend: info.backend, model: loaded, ready: true });
  $("go").disabled = false;
  finished(`ready (ember started in ${(info.startup_ms / 1000).toFixed(1)} s): type a query`);
  if (params.get("q")) {
    $("query").value = params.get("q");
    await search();
  }
} catch (e) {
  demo.error = String(e.message ?? e);
  finished(`error: ${demo.error}`);
}
