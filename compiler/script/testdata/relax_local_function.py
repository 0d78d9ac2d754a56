@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
        @R.function
        def square(a: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
            b = R.multiply(a, a)
            return b

        y = square(x)
        return y
