#!/usr/bin/env python3
"""Exports one ONNX model per kernel family for bench/kernel_families.sh.

Each model is one layer as real networks have it (batch 1, float32, random weights, PyTorch's
exporter, opset 17): a convolution with its bias and ReLU, or a matmul. The manifest lists each
family's shape so that bench/dnnl_bench.cc times oneDNN on the same problem.

usage: make_kernel_families.py OUT_DIR
"""
import json
import os
import sys

import torch
from torch import nn

# name, (in channels, out channels, kernel, stride, padding, dilation, groups), input shape
CONVS = [
    ("dense_3x3_56", (64, 64, 3, 1, 1, 1, 1), (1, 64, 56, 56)),          # ResNet-18 layer 1
    ("dense_3x3_14", (256, 256, 3, 1, 1, 1, 1), (1, 256, 14, 14)),       # ResNet-18 layer 3
    ("pointwise_28", (128, 512, 1, 1, 0, 1, 1), (1, 128, 28, 28)),       # ResNet-50 expansion
    ("pointwise_7", (960, 160, 1, 1, 0, 1, 1), (1, 960, 7, 7)),          # MobileNetV2 projection
    ("depthwise_3x3_56", (144, 144, 3, 1, 1, 1, 144), (1, 144, 56, 56)),  # MobileNetV2
    ("depthwise_3x3_s2", (96, 96, 3, 2, 1, 1, 96), (1, 96, 112, 112)),   # MobileNetV2
    ("grouped_3x3_28", (256, 256, 3, 1, 1, 1, 32), (1, 256, 28, 28)),    # ResNeXt-50
    ("stem_7x7_s2", (3, 64, 7, 2, 3, 1, 1), (1, 3, 224, 224)),           # ResNet's first
    ("dilated_3x3_28", (256, 256, 3, 1, 2, 2, 1), (1, 256, 28, 28)),     # DeepLabV3
    ("conv3d_3x3x3", (64, 64, 3, 1, 1, 1, 1), (1, 64, 8, 28, 28)),       # R3D-18
]
# name, (rows, inner, columns): x [rows, inner] @ W [inner, columns] + bias
MATMULS = [
    ("linear_1x768x3072", (1, 768, 3072)),     # BERT's FFN at batch 1
    ("linear_128x768x768", (128, 768, 768)),   # BERT's projections, 128 tokens
]


class Conv(nn.Module):
    def __init__(self, spec, three_d):
        super().__init__()
        cin, cout, k, s, p, d, g = spec
        cls = nn.Conv3d if three_d else nn.Conv2d
        self.conv = cls(cin, cout, k, s, p, d, g, bias=True)

    def forward(self, x):
        return torch.relu(self.conv(x))


def conv_flops(spec, shape, out_shape):
    cin, cout, k, s, p, d, g = spec
    window = k ** (len(shape) - 2)
    outputs = 1
    for n in out_shape:
        outputs *= n
    return 2 * outputs * (cin // g) * window


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    manifest = []
    for name, spec, shape in CONVS:
        model = Conv(spec, len(shape) == 5).eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = model(x)
        torch.onnx.export(model, x, os.path.join(out_dir, name + ".onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        cin, cout, k, s, p, d, g = spec
        manifest.append({"name": name, "kind": "conv", "input": list(shape), "out_channels": cout,
                         "kernel": k, "stride": s, "padding": p, "dilation": d, "groups": g,
                         "output": list(y.shape), "flops": conv_flops(spec, shape, y.shape)})
    for name, (m, k, n) in MATMULS:
        model = nn.Linear(k, n).eval()
        x = torch.randn(m, k)
        torch.onnx.export(model, x, os.path.join(out_dir, name + ".onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        manifest.append({"name": name, "kind": "matmul", "m": m, "k": k, "n": n,
                         "flops": 2 * m * k * n})
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
