// Driver of bench/onnx_models.sh: for each model (of each directory's manifest.json) and thread
// count, times the Kiln artifact with `kiln bench` and the .onnx with ONNX Runtime
// (tools/ort/bench.js), one after the other, each in its own process, on the model's reference
// input; prints medians, the ratio and the model's cold compile time.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [kiln, artifacts, repeat, minMs, ...dirs] = process.argv.slice(2);
const compileMs = Object.fromEntries(
  fs.readFileSync(path.join(artifacts, 'compile_ms'), 'utf8').trim().split('\n')
    .map((line) => line.split(' ')));

function kilnMedian(name, input, threads) {
  const out = execFileSync(kiln, [
    'bench', path.join(artifacts, `${name}.kiln`), '--json', '--threads', String(threads),
    '--repeat', repeat, '--min-repeat-ms', minMs, '--input', `input=${input}`,
  ]);
  return JSON.parse(out).median_seconds;
}

function ortMedian(file, input, threads) {
  const out = execFileSync('node', ['tools/ort/bench.js', file, input, String(threads), repeat,
    minMs]);
  return JSON.parse(out).median_seconds;
}

const us = (s) => (s * 1e6 < 100 ? (s * 1e6).toFixed(1) : (s * 1e6).toFixed(0));
console.log('| model | threads | Kiln µs | ONNX Runtime µs | Kiln / ORT | Kiln compile s |');
console.log('|---|---|---|---|---|---|');
for (const dir of dirs) {
  const models = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')).models;
  for (const [name, m] of Object.entries(models)) {
    const input = path.join(dir, m.input);
    for (const threads of [1, 2]) {
      const k = kilnMedian(name, input, threads);
      const o = ortMedian(path.join(dir, m.file), input, threads);
      const compile = threads === 1 ? (Number(compileMs[name]) / 1000).toFixed(2) : '';
      console.log(`| ${name} | ${threads} | ${us(k)} | ${us(o)} | ${(k / o).toFixed(2)}× | ${compile} |`);
    }
  }
}
