// The difftest's ONNX Runtime oracle: runs a batch of jobs in one process.
//
// Usage: NODE_PATH=<dir>/node_modules node ort_run.js JOBS.json
// JOBS.json: [{model, inputs: [{name, file, dims, type}], out}]; input files
// are raw little-endian arrays. For each job it writes OUT/<k>.bin per output
// and OUT/result.json ({outputs: [{name, file, dims, type}]} or {error}).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const arrayTypes = {
  float32: Float32Array,
  float64: Float64Array,
  int64: BigInt64Array,
  int32: Int32Array,
  bool: Uint8Array,
};

function readInput(spec) {
  const bytes = fs.readFileSync(spec.file);
  const Type = arrayTypes[spec.type];
  const data = new Type(bytes.buffer, bytes.byteOffset, bytes.byteLength / Type.BYTES_PER_ELEMENT);
  return new ort.Tensor(spec.type, Type.from(data), spec.dims);
}

async function runJob(job) {
  // No graph optimizations: the oracle is the model's literal semantics (ORT's
  // Pad fusion, for one, changes an AveragePool's ceil_mode output size).
  const options = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled'};
  const session = await ort.InferenceSession.create(job.model, options);
  const feeds = {};
  for (const input of job.inputs) feeds[input.name] = readInput(input);
  const results = await session.run(feeds);
  const outputs = [];
  session.outputNames.forEach((name, k) => {
    const t = results[name];
    const file = path.join(job.out, `out_${k}.bin`);
    const type = t.type === 'bool' ? 'bool' : t.type;
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    outputs.push({name, file, dims: Array.from(t.dims, Number), type: type === 'bool' ? 'uint8' : type});
  });
  return {outputs};
}

async function main() {
  const jobs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  for (const job of jobs) {
    let result;
    try {
      result = await runJob(job);
    } catch (e) {
      result = {error: String(e && e.message ? e.message : e).split('\n')[0]};
    }
    fs.writeFileSync(path.join(job.out, 'result.json'), JSON.stringify(result));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
