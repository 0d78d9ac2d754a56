// Runs every NAME.onnx in DIR through ONNX Runtime (CPU, one thread) on its NAME.input_K.npy
// files and writes NAME.output_K.npy: the reference outputs of the importer's per-op tests.
// `node reference.js DIR optimized` runs with ONNX Runtime's graph optimizations on instead (a
// QDQ model then runs on its int8 kernels) and writes NAME.optimized_output_K.npy.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./npy');

async function main() {
  const dir = process.argv[2];
  const optimized = process.argv[3] === 'optimized';
  const models = fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort();
  for (const file of models) {
    const stem = file.slice(0, -'.onnx'.length);
    const session = await ort.InferenceSession.create(path.join(dir, file), {
      intraOpNumThreads: 1, graphOptimizationLevel: optimized ? 'all' : 'disabled',
    });
    const feeds = {};
    session.inputNames.forEach((name, k) => {
      const t = readNpy(path.join(dir, `${stem}.input_${k}.npy`));
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    const results = await session.run(feeds);
    session.outputNames.forEach((name, k) => {
      const t = results[name];
      const kind = optimized ? 'optimized_output' : 'output';
      writeNpy(path.join(dir, `${stem}.${kind}_${k}.npy`), t.type, t.dims, t.data);
    });
    console.log(`${stem}: ${session.outputNames.length} output(s)`);
  }
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
