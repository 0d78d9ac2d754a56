@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        a = R.const([[1.0, -2.5], [3.25, 1e-07]], "float32")
        b = R.const([1, -2, 3], "int64")
        c = R.const([True, False], "bool")
        d = R.const(0.5, "float64")
        e = R.const([0.5, 65504.0, -0.000061035156], "float16")
        f = R.const([0, 255, 7], "uint8")
        g = R.const([], "float32", shape=(0, 3))
        h = R.const([1.0, 2.0], "bfloat16")
        i = R.const([[1, 2], [3, 4]], "int8")
        y = R.add(x, a)
        return y
