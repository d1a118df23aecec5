// Runs one f32 model on ONNX Runtime with every graph optimization on (so
// that ORT fuses a QDQ model's QuantizeLinear/DequantizeLinear pairs into its
// own int8 kernels) and writes the first output as raw little-endian f32.
//
// Usage: NODE_PATH=<dir>/node_modules node ort_run.js MODEL.onnx INPUT.bin DIMS OUTPUT.bin [OPTIMIZED.onnx]
// DIMS is comma-separated (1,3,224,224); OPTIMIZED.onnx receives the graph ORT ran.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inputFile, dims, outputFile, optimized] = process.argv.slice(2);
  const options = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all'};
  if (optimized) options.optimizedModelFilePath = optimized;
  const session = await ort.InferenceSession.create(model, options);
  const bytes = fs.readFileSync(inputFile);
  const data = Float32Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', data, dims.split(',').map(Number))};
  const results = await session.run(feeds);
  const out = results[session.outputNames[0]];
  fs.writeFileSync(outputFile, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
}
main().catch((e) => {
  console.error(`ort_run.js: ${String(e.message || e).split('\n')[0]}`);
  process.exit(1);
});
