// Driver of bench/int8_models.sh: for each model, one thread then two, times the float and the
// int8 artifacts with `kiln bench` and the float and QDQ models with ONNX Runtime
// (tools/ort/bench.js), each in its own process, on the first held-out input; prints medians,
// the ratios and the quantized model's accuracy (quantize's report).
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [kiln, work, repeat, minMs, ...names] = process.argv.slice(2);
const input = path.join(work, 'eval', 'eval_00.npy');

function kilnMedian(artifact, threads) {
  const out = execFileSync(kiln, ['bench', artifact, '--json', '--threads', String(threads),
    '--repeat', repeat, '--min-repeat-ms', minMs, '--input', `input=${input}`]);
  return JSON.parse(out).median_seconds;
}

function ortMedian(model, threads) {
  const out = execFileSync('node', ['tools/ort/bench.js', model, input, String(threads), repeat,
    minMs]);
  return JSON.parse(out).median_seconds;
}

const us = (s) => (s * 1e6).toFixed(0);
console.log('| model | threads | Kiln fp32 µs | Kiln int8 µs | int8 speed-up | ORT fp32 µs | ' +
  'ORT int8 µs | Kiln int8 / ORT int8 | SQNR dB | top-1 agrees |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const name of names) {
  const report = JSON.parse(fs.readFileSync(path.join(work, `${name}.report.json`), 'utf8'));
  const out = report.outputs[0];
  for (const threads of [1, 2]) {
    const kf = kilnMedian(path.join(work, `${name}.kiln`), threads);
    const ki = kilnMedian(path.join(work, `${name}.int8.kiln`), threads);
    const of = ortMedian(path.join(work, `${name}.onnx`), threads);
    const oi = ortMedian(path.join(work, `${name}.int8.onnx`), threads);
    console.log(`| ${name} | ${threads} | ${us(kf)} | ${us(ki)} | ${(kf / ki).toFixed(2)}× | ` +
      `${us(of)} | ${us(oi)} | ${(ki / oi).toFixed(2)}× | ${out.sqnr_db} | ` +
      `${out.top1_agree}/${out.top1_total} |`);
  }
}
