@I.ir_module
class Module:
    @R.function
    def main(t: R.Tuple(R.Tensor((2,), dtype="float32"), R.Tuple(R.Shape([2]), R.Prim("int32")))) -> R.Prim("int32"):
        inner = t[1]
        p: R.Prim("int32") = inner[1]
        return p
