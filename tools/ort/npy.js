// NumPy .npy (version 1.0) reading and writing for the ONNX Runtime helpers.
'use strict';
const fs = require('fs');

const KINDS = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  const dims = shapeText.split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const [type, Array] = KINDS[descr];
  const body = buf.subarray(start + headerLen);
  const copy = new Uint8Array(body.length);
  copy.set(body);
  let data = new Array(copy.buffer);
  if (type === 'bool') data = Uint8Array.from(data).map((v) => v !== 0);
  return { type, dims, data };
}

function writeNpy(path, type, dims, data) {
  const descr = Object.keys(KINDS).find((k) => KINDS[k][0] === type);
  if (!descr) throw new Error(`cannot write ${type}`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  let bytes;
  if (type === 'bool') bytes = Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  else bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(header, 'latin1'), bytes]));
}

module.exports = { readNpy, writeNpy };
