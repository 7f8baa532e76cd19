// onnxruntime-web's wasm execution provider under Node, one thread, driven line by line so
// that a Python benchmark can alternate its calls with its own (benchmarks/bench_wasm.py).
//
//   node benchmarks/ort_wasm_node.mjs MODEL.onnx INPUT.f32 D0,D1,...
//
// INPUT.f32 holds the input's float32 values (little-endian). Prints "ready" after three
// warm-up runs; then each stdin line "run" runs the model once and prints the milliseconds
// it took (performance.now around session.run), and "out" prints the first output as JSON.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const ort = await import(join(here, '..', 'web', 'node_modules', 'onnxruntime-web', 'dist',
                              'ort.wasm.min.mjs'));
const [model, input, dims] = process.argv.slice(2);
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
const session = await ort.InferenceSession.create(new Uint8Array(readFileSync(model)),
                                                  { executionProviders: ['wasm'] });
const raw = readFileSync(input);
const values = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', values,
                                                        dims.split(',').map(Number)) };
let last = null;
for (let i = 0; i < 3; i++) last = await session.run(feeds);
console.log('ready');
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'run') {
    const t0 = performance.now();
    last = await session.run(feeds);
    console.log(String(performance.now() - t0));
  } else if (line === 'out') {
    console.log(JSON.stringify(Array.from(last[session.outputNames[0]].data)));
  }
}
