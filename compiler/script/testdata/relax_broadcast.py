@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("b", 1, 16), dtype="float32"), bias: R.Tensor((8, 1), dtype="float32")) -> R.Tensor(("b", 8, 16), dtype="float32"):
        b = T.int64()
        with R.dataflow():
            y = R.add(x, bias)
            z = R.divide(y, R.const(2.0, "float32"))
            w: R.Tensor((b, 8, 16), dtype="float32") = R.nn.relu(z)
            R.output(w)
        return w
