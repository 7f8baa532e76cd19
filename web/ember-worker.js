// Ember in a module Web Worker: `loadEmber({ worker: true })` in ember.js starts this file.
// Messages in: { id, type: "init", options } then { id, type: "run", code, globals }.
// Messages out: { id, result } or { id, error }, and { status } progress lines.
import { loadEmber } from "./ember.js";

let ember = null;

self.onmessage = async (e) => {
  const { id, type } = e.data;
  try {
    let result;
    if (type === "init") {
      const status = (msg) => self.postMessage({ status: msg });
      ember = await loadEmber({ ...e.data.options, worker: false, onStatus: status });
      result = ember.info;
    } else if (type === "run") {
      if (!ember) throw new Error("ember worker: run before init");
      result = await ember.run(e.data.code, e.data.globals ?? {});
    } else {
      throw new Error(`ember worker: unknown message type ${type}`);
    }
    self.postMessage({ id, result });
  } catch (err) {
    self.postMessage({ id, error: String(err && err.message ? err.message : err) });
  }
};
