@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), dtype="float32"), ok: R.Prim("bool")) -> R.Object:
        n = R.null_value()
        _ = R.assert_op(ok, R.str("x must be ok"))
        p = R.print(x, R.str("value"))
        return n
