#!/usr/bin/env python3
"""Exports full-size models with random weights for bench/onnx_models.sh.

The test models in tests/models are small enough to check into git, and small enough to hide
what large layers cost. This writes, with PyTorch's ONNX exporter (fixed seeds, eval mode):

  resnet18          ResNet-18 (torchvision's layout), 1x3x224x224
  bert_base_layer   one BERT-base encoder layer (768 wide, 12 heads, 3072 FFN, GELU), 1x128x768
  mlp_1024_4096     an MLP of 1024 -> 4096 -> 1000 linear layers at batch 8 (32 MB of weights)

each with a reference input and PyTorch's output in .npy, and a manifest.json in the format of
tests/models/manifest.json.  usage: make_full_models.py OUT_DIR [NAME ...]

Named, it writes those models only, and may name one of EXTRA_MODELS too:

  resnet34          ResNet-34 (the same stages as ResNet-18, 3-4-6-3 blocks): what
                    bench/tune_transfer.sh tunes after ResNet-18
"""
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, blocks_per_stage):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for (cout, stride), n in zip([(64, 1), (128, 2), (256, 2), (512, 2)], blocks_per_stage):
            blocks += [BasicBlock(cin, cout, stride)] + [BasicBlock(cout, cout, 1)
                                                         for _ in range(n - 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def ResNet18():
    return ResNet([2, 2, 2, 2])


def ResNet34():
    return ResNet([3, 4, 6, 3])


class BertLayer(nn.Module):
    """BERT's encoder layer as Hugging Face writes it: separate Q/K/V projections, erf GELU."""

    def __init__(self, hidden=768, heads=12, ffn=3072):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up, self.down = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        context = context.permute(0, 2, 1, 3).reshape(b, s, h)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(nn.functional.gelu(self.up(x))))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(1024, 4096), nn.Linear(4096, 1000)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


MODELS = {
    "resnet18": (ResNet18, [1, 3, 224, 224], ["Conv", "BatchNormalization", "Relu", "MaxPool",
                                              "Add", "GlobalAveragePool", "Flatten", "Gemm"]),
    "bert_base_layer": (BertLayer, [1, 128, 768], ["MatMul", "Add", "Reshape", "Transpose",
                                                   "Div", "Softmax", "LayerNormalization",
                                                   "Erf", "Mul"]),
    "mlp_1024_4096": (Mlp, [8, 1024], ["Gemm", "Relu"]),
}
RESNET_OPS = MODELS["resnet18"][2]
EXTRA_MODELS = {"resnet34": (ResNet34, [1, 3, 224, 224], RESNET_OPS)}


def randomize_batch_norms(model):
    # Fresh BatchNorm layers are the identity; give them statistics a trained network would have.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)


def main(out_dir, names):
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"torch": torch.__version__, "models": {}}
    every = {**MODELS, **EXTRA_MODELS}
    for name in names:
        if name not in every:
            sys.exit(f"make_full_models.py: no model '{name}' (one of {', '.join(every)})")
    # Each model's seed is its place in the list, named or not.
    for seed, (name, (make, shape, ops)) in enumerate(every.items()):
        if (names and name not in names) or (not names and name not in MODELS):
            continue
        torch.manual_seed(seed)
        model = make().eval()
        with torch.no_grad():
            randomize_batch_norms(model)
            x = torch.randn(*shape)
            y = model(x)
        path = os.path.join(out_dir, f"{name}.onnx")
        # training=PRESERVE keeps BatchNormalization as its own node (the exporter would fold it
        # into the convolution in eval mode); Kiln folds it itself.
        torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"],
                          opset_version=17, training=torch.onnx.TrainingMode.PRESERVE)
        np.save(os.path.join(out_dir, f"{name}.input.npy"), x.numpy())
        np.save(os.path.join(out_dir, f"{name}.output.npy"), y.numpy())
        manifest["models"][name] = {
            "file": f"{name}.onnx", "input": f"{name}.input.npy", "output": f"{name}.output.npy",
            "input_shape": shape, "output_shape": list(y.shape), "opset": 17,
            "dynamic_batch": False, "ops": ops, "bytes": os.path.getsize(path),
            "more_batches": {},
        }
        print(f"{name}: {os.path.getsize(path) / 1e6:.1f} MB", file=sys.stderr)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/full_models", sys.argv[2:])
