// ONNX Runtime (onnxruntime-node) latency of one model: prints the median
// run time in seconds after warm-up. Usage: node cpu_ort_bench.js MODEL.onnx THREADS RUNS
// NODE_PATH must reach the bench-local node_modules (cpu_model_bench.sh sets it).
const ort = require('onnxruntime-node');

async function main() {
  const [model, threads, runs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const name of session.inputNames) {
    // Every bench model takes one 1x3x224x224 f32 image.
    const data = new Float32Array(1 * 3 * 224 * 224).map(() => Math.random() * 2 - 1);
    feeds[name] = new ort.Tensor('float32', data, [1, 3, 224, 224]);
  }
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < runs; ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((a, b) => a - b);
  console.log(times[Math.floor(times.length / 2)]);
}
main().catch((e) => { console.error(e); process.exit(1); });
