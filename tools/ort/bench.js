// Times one ONNX model in ONNX Runtime (CPU) the way `kiln bench` times an artifact: REPEAT
// measurements of NUMBER back-to-back calls each, NUMBER grown until a measurement takes
// MIN_MS; prints the per-call median and minimum in seconds as JSON.
// usage: node bench.js MODEL.onnx INPUT.npy THREADS [REPEAT] [MIN_MS]
'use strict';
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

async function main() {
  const [model, inputPath, threadsArg, repeatArg, minMsArg] = process.argv.slice(2);
  const threads = Number(threadsArg);
  const repeat = Number(repeatArg || 20);
  const minMs = Number(minMsArg || 100);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const t = readNpy(inputPath);
  const feeds = { [session.inputNames[0]]: new ort.Tensor(t.type, t.data, t.dims) };
  const time = async (n) => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; ++i) await session.run(feeds);
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  await time(5);  // warm-up
  let number = 1;
  while ((await time(number)) * 1000 < minMs) number *= 2;
  const perCall = [];
  for (let r = 0; r < repeat; ++r) perCall.push((await time(number)) / number);
  perCall.sort((a, b) => a - b);
  console.log(JSON.stringify({
    model, threads, number, repeat,
    median_seconds: perCall[Math.floor(repeat / 2)], min_seconds: perCall[0],
  }));
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
