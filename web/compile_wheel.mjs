// node web/compile_wheel.mjs IN.whl OUT.whl [DROP...]: ember's wheel with its modules compiled
// to bytecode by the page's own Python (Pyodide from web/node_modules, run by Node); see
// compile_wheel.py. build_dist.py runs it, naming the npm package pyodide in EMBER_PYODIDE_DIR
// (default: web/node_modules/pyodide).
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const pyodideDir = process.env.EMBER_PYODIDE_DIR;
const { loadPyodide } = await import(pyodideDir
  ? pathToFileURL(`${pyodideDir}/pyodide.mjs`).href : "./node_modules/pyodide/pyodide.mjs");

const [src, dst, ...drop] = process.argv.slice(2);
if (!dst) throw new Error("usage: node compile_wheel.mjs IN.whl OUT.whl [DROP...]");
const pyodide = await loadPyodide();
pyodide.FS.writeFile("/tmp/in.whl", readFileSync(src));
pyodide.runPython(readFileSync(new URL("compile_wheel.py", import.meta.url), "utf8"));
pyodide.globals.get("main")("/tmp/in.whl", "/tmp/out.whl", drop);
writeFileSync(dst, pyodide.FS.readFile("/tmp/out.whl"));
