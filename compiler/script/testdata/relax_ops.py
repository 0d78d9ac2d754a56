@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3,), dtype="float32")) -> R.Tensor((6,), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
            lv1: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, x)
            lv2 = R.nn.relu(lv1)
            lv3 = R.exp(lv2)
            lv4 = R.subtract(lv3, R.const(1.5, "float32"))
            lv5 = R.reshape(lv4, R.shape([3, 2]))
            gv: R.Tensor((6,), dtype="float32") = R.flatten(lv5)
            R.output(gv)
        return gv
