#!/usr/bin/python3
"""Writes the inputs and NumPy-computed reference outputs of the TVM-printed corpus.

Run with Debian's python3 and python3-numpy from this folder: ./make_references.py
Files: MODULE.CASE.INPUT.npy for each input, MODULE.CASE.outK.npy for each output K.
Modules with a symbolic dimension have one case per value of it.
"""
import numpy as np

rng = np.random.default_rng(25)


def rand(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def save(module, case, inputs, outputs):
    for name, value in inputs.items():
        np.save(f"{module}.{case}.{name}.npy", value)
    for k, value in enumerate(outputs):
        np.save(f"{module}.{case}.out{k}.npy", value)


def conv_block():
    x, w, b = rand(1, 3, 8, 8), rand(4, 3, 3, 3), rand(4)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 4, 8, 8), np.float32)
    for f in range(4):
        for i in range(8):
            for j in range(8):
                conv[0, f, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[f]).sum()
    act = np.maximum(conv + b.reshape(1, 4, 1, 1), 0)
    pool = act.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    save("conv_block.legalized", "c0", {"x": x, "w": w, "b": b}, [pool])


def softmax_scale():
    x, s = rand(4, 16), np.array(1.5, np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    save("softmax_scale.legalized", "c0", {"x": x, "s": s},
         [(soft * s).astype(np.float32), (x * np.float32(10)).astype(np.int32)])


def attention_dynamic():
    for case, n in (("c0", 1), ("c1", 5), ("c2", 12)):
        q, k, v = rand(1, n, 16), rand(1, n, 16), rand(1, n, 16)
        scores = q @ k.transpose(0, 2, 1) * np.float32(0.25)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        save("attention_dynamic", case, {"q": q, "k": k, "v": v},
             [(e / e.sum(axis=-1, keepdims=True)) @ v])


def reshape_chain_dynamic():
    for case, n in (("c0", 1), ("c1", 3), ("c2", 8)):
        x, y, z = rand(n, 2, 3), rand(n, 6), rand(6)
        a = x.reshape(n * 6)
        b = np.concatenate([a, z]).reshape(n + 1, 6)
        d = np.concatenate([a.reshape(n, 6), y]) * 2
        save("reshape_chain_dynamic", case, {"x": x, "y": y, "z": z},
             [b, d[:, :2].reshape(n * 4), d[:, 2:].reshape(n * 8)])


def call_tir_tir_vars():
    for case, n in (("c0", 1), ("c1", 4), ("c2", 9)):
        x = rand(n, 2)
        save("call_tir_tir_vars", case, {"x": x}, [x.reshape(n * 2) + np.float32(n + 1)])


def if_tuple():
    x = rand(4)
    for case, flag in (("c0", True), ("c1", False)):
        y = x * 2 if flag else -x
        save("if_tuple", case, {"x": x, "flag": np.array(flag)}, [y + x, y])


for make in (conv_block, softmax_scale, attention_dynamic, reshape_chain_dynamic,
             call_tir_tir_vars, if_tuple):
    make()
