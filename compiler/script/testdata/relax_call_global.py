@I.ir_module
class Module:
    @R.function(private=True)
    def helper(a: R.Tensor(("p", 4), dtype="float32")) -> R.Tensor(("p * 4",), dtype="float32"):
        p = T.int64()
        f = R.flatten(a)
        return f

    @R.function
    def main(x: R.Tensor((8, 4), dtype="float32")) -> R.Tensor((32,), dtype="float32"):
        cls = Module
        y = cls.helper(x)
        return y
