"""A tiny GPT-style decoder (issue 49's decoder pattern), exported from PyTorch with a symbolic
sequence axis: its positions are Range(0, seq) and its causal mask is built from the sequence
length. Random weights, fixed seed; reference logits at three lengths.

    /usr/bin/python3 compiler/frontend/onnx/testdata/models/make_tiny_gpt.py

(Debian's python3-torch; torch.onnx.export needs no onnx package.)
"""
import os

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        split = lambda z: z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = (q @ k.transpose(-2, -1)) / ((d // self.heads) ** 0.5)
        pos = torch.arange(t)
        att = att.masked_fill(pos[None, :] > pos[:, None], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class TinyGpt(nn.Module):
    def __init__(self, vocab=50, d=32, context=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(context, d)
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(0, ids.shape[1], dtype=torch.long)
        return self.head(self.ln(self.blocks(self.wte(ids) + self.wpe(pos)[None])))


def main():
    torch.manual_seed(0)
    model = TinyGpt().eval()
    torch.onnx.export(model, (torch.randint(0, 50, (1, 7)),), os.path.join(HERE, "tiny_gpt.onnx"),
                      input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {1: "seq"}, "logits": {1: "seq"}}, opset_version=17)
    for length in (3, 7, 12):
        ids = torch.randint(0, 50, (1, length))
        np.save(os.path.join(HERE, f"tiny_gpt.seq{length}.input.npy"), ids.numpy())
        np.save(os.path.join(HERE, f"tiny_gpt.seq{length}.output.npy"), model(ids).detach().numpy())


if __name__ == "__main__":
    main()
