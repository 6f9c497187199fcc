#!/usr/bin/env node
// ONNX Runtime (CPU execution provider) timings of porta's example models (models/<name>/),
// the peer that bench/compare_models.sh compares porta with.
//
// Usage: node bench/peers/ort_bench.js [--repeat N] [--warmup W] [--threads T]
//                                      [--models-dir DIR] [NAME ...]
// For each model: load with all graph optimizations, intra-op threads T (default 2), run W
// warm-up inferences (default 10), then N timed ones (default 50). Prints one line per model:
//   model=<name> median_us=<median of the N wall times> min_us=<fastest> rel_err=<e> create_ms=<c>
// where rel_err is ||ort - pytorch||_2 / ||pytorch||_2 over all outputs (a check that ORT and
// the saved PyTorch outputs agree, i.e. that the fixtures are sound) and create_ms is the wall
// time of InferenceSession.create (reading the file, graph optimizations, kernel set-up).
// --models-dir points it at another tree of <name>/model.onnx folders (bench/compare_zoo.sh
// uses the real-model zoo, build/zoo). --profile PREFIX turns on ORT's profiler for the timed
// runs (its per-node kernel times; the times above then include its overhead) and adds
// profile=<the JSON file ORT wrote> to the line (bench/compare_nodes.sh reads it).
//
// Needs the npm package onnxruntime-node 1.30.0 in bench/peers:
//   npm install --prefix bench/peers onnxruntime-node@1.30.0 --onnxruntime-node-install=skip
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('[ort_bench] onnxruntime-node is not installed; install it with\n' +
                '  npm install --prefix bench/peers onnxruntime-node@1.30.0 ' +
                '--onnxruntime-node-install=skip');
  process.exit(3);
}

function parseArgs(argv) {
  const opts = {repeat: 50, warmup: 10, threads: 2,
                modelsDir: path.join(__dirname, '..', '..', 'models'), names: []};
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--repeat') opts.repeat = parseInt(value(), 10);
    else if (a === '--warmup') opts.warmup = parseInt(value(), 10);
    else if (a === '--threads') opts.threads = parseInt(value(), 10);
    else if (a === '--models-dir') opts.modelsDir = value();
    else if (a === '--profile') opts.profile = value();
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else opts.names.push(a);
  }
  if (!(opts.repeat > 0) || !(opts.warmup >= 0) || !(opts.threads > 0))
    throw new Error('--repeat and --threads must be positive, --warmup non-negative');
  return opts;
}

// The .npy dtypes the fixtures use -> ORT tensor type and typed array.
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};

// Reads a C-order .npy file (version 1 or 2 header) into an ort.Tensor.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) throw new Error(`${file}: malformed header ${header}`);
  if (order[1] === 'True') throw new Error(`${file}: Fortran order is not supported`);
  const type = NPY_TYPES[descr[1]];
  if (!type) throw new Error(`${file}: dtype ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  const bytes = buf.subarray(offset, offset + count * type[1].BYTES_PER_ELEMENT);
  const data = new type[1](count);
  new Uint8Array(data.buffer).set(bytes);
  return new ort.Tensor(type[0], type[0] === 'bool' ? Uint8Array.from(data) : data, dims);
}

// `<name> <file>` lines of inputs.txt / outputs.txt.
function readListing(dir, file) {
  return fs.readFileSync(path.join(dir, file), 'utf8').split('\n').filter((l) => l.trim())
    .map((l) => l.trim().split(/\s+/)).map(([name, f]) => [name, path.join(dir, f)]);
}

function relativeError(outputs, refs) {
  let diff = 0, norm = 0;
  for (const [name, ref] of refs) {
    const got = outputs[name];
    if (!got || got.data.length !== ref.data.length) return NaN;
    for (let i = 0; i < ref.data.length; ++i) {
      const r = Number(ref.data[i]), d = Number(got.data[i]) - r;
      diff += d * d;
      norm += r * r;
    }
  }
  return norm > 0 ? Math.sqrt(diff / norm) : Math.sqrt(diff);
}

// Ends ORT's profiling and returns the file it wrote: <prefix>_<date and time>.json (the
// Node binding does not return the name).
function endProfiling(session, prefix) {
  const named = session.endProfiling();
  if (typeof named === 'string' && named) return named;
  const dir = path.dirname(prefix), base = path.basename(prefix);
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'))
    .map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  return files.length ? files[0] : 'none';
}

async function benchModel(dir, opts) {
  const c0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all',
    intraOpNumThreads: opts.threads, interOpNumThreads: 1, executionMode: 'sequential',
    ...(opts.profile ? {enableProfiling: true, profileFilePrefix: opts.profile} : {}),
  });
  const createMs = Number(process.hrtime.bigint() - c0) / 1e6;
  const feeds = {};
  for (const [name, file] of readListing(dir, 'inputs.txt')) feeds[name] = readNpy(file);
  const refs = readListing(dir, 'outputs.txt').map(([name, file]) => [name, readNpy(file)]);
  const first = await session.run(feeds);
  const relErr = relativeError(first, refs);
  for (let i = 0; i < opts.warmup; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < opts.repeat; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  const profile = opts.profile ? endProfiling(session, opts.profile) : undefined;
  await session.release();
  return {median, min: times[0], relErr, createMs, profile};
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let names = opts.names;
  if (!names.length) {
    names = fs.readdirSync(opts.modelsDir)
      .filter((n) => fs.existsSync(path.join(opts.modelsDir, n, 'model.onnx'))).sort();
  }
  let failed = false;
  for (const name of names) {
    try {
      const r = await benchModel(path.join(opts.modelsDir, name), opts);
      console.log(`model=${name} median_us=${r.median.toFixed(1)} min_us=${r.min.toFixed(1)} ` +
                  `rel_err=${r.relErr.toExponential(2)} create_ms=${r.createMs.toFixed(1)}` +
                  (r.profile ? ` profile=${r.profile}` : ''));
    } catch (e) {
      failed = true;
      console.log(`model=${name} error=${JSON.stringify(String(e.message || e))}`);
    }
  }
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(`[ort_bench] ${e.message || e}`);
  process.exit(2);
});
