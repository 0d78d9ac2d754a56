@I.ir_module
class Module:
    @R.function(pure=False)
    def main(f: R.Callable([R.Tensor((2,), dtype="float32")], R.Tensor((2,), dtype="float32"), purity=False), x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        y = f(x)
        z = f(y)
        return z
