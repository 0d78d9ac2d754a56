# A 3x3 stride-2 convolution of 64 -> 64 channels over a 128x128 NCHW image, its weight an input
# (so no pass repacks it and the layout stays NCHW): the schedule rule for a strided input row
# that output channels share. bench/README.md, "ONNX models against ONNX Runtime".
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 64, 128, 128), "float32"), w: R.Tensor((64, 64, 3, 3), "float32")) -> R.Tensor((1, 64, 64, 64), "float32"):
        with R.dataflow():
            y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1])
            R.output(y)
        return y
