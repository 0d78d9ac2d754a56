// Runs every NAME.onnx in DIR through ONNX Runtime (CPU, one thread) on its NAME.input_K.npy
// files and writes NAME.output_K.npy: the reference outputs of the importer's per-op tests.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./npy');

async function main() {
  const dir = process.argv[2];
  const models = fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort();
  for (const file of models) {
    const stem = file.slice(0, -'.onnx'.length);
    const session = await ort.InferenceSession.create(path.join(dir, file), {
      intraOpNumThreads: 1, graphOptimizationLevel: 'disabled',
    });
    const feeds = {};
    session.inputNames.forEach((name, k) => {
      const t = readNpy(path.join(dir, `${stem}.input_${k}.npy`));
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    const results = await session.run(feeds);
    session.outputNames.forEach((name, k) => {
      const t = results[name];
      writeNpy(path.join(dir, `${stem}.output_${k}.npy`), t.type, t.dims, t.data);
    });
    console.log(`${stem}: ${session.outputNames.length} output(s)`);
  }
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
