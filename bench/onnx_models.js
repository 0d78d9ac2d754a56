// Driver of bench/onnx_models.sh: for each model and thread count, times the Kiln artifact with
// `kiln bench` and the .onnx with ONNX Runtime (tools/ort/bench.js), one after the other, each
// in its own process, on the model's reference input; prints medians and the ratio.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [kiln, artifacts, repeat, minMs] = process.argv.slice(2);
const models = JSON.parse(fs.readFileSync('tests/models/manifest.json', 'utf8')).models;

function kilnMedian(name, threads) {
  const out = execFileSync(kiln, [
    'bench', path.join(artifacts, `${name}.kiln`), '--json', '--threads', String(threads),
    '--repeat', repeat, '--min-repeat-ms', minMs,
    '--input', `input=tests/models/${models[name].input}`,
  ]);
  return JSON.parse(out).median_seconds;
}

function ortMedian(name, threads) {
  const out = execFileSync('node', [
    'tools/ort/bench.js', `tests/models/${models[name].file}`,
    `tests/models/${models[name].input}`, String(threads), repeat, minMs,
  ]);
  return JSON.parse(out).median_seconds;
}

const us = (s) => (s * 1e6 < 100 ? (s * 1e6).toFixed(1) : (s * 1e6).toFixed(0));
console.log('| model | threads | Kiln µs | ONNX Runtime µs | Kiln / ORT |');
console.log('|---|---|---|---|---|');
for (const name of Object.keys(models)) {
  for (const threads of [1, 2]) {
    const k = kilnMedian(name, threads);
    const o = ortMedian(name, threads);
    console.log(`| ${name} | ${threads} | ${us(k)} | ${us(o)} | ${(k / o).toFixed(2)}× |`);
  }
}
