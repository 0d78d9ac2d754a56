@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), d: R.Prim("bool"), x: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
        if c:
            if d:
                r1 = R.exp(x)
            else:
                r1 = R.negative(x)
            r = r1
        else:
            r = x
        return r
