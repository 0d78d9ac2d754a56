@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(ndim=2, dtype="float32")) -> R.Tensor(("n * 4",), dtype="float32"):
        n = T.int64()
        m = T.int64()
        k = T.int64()
        R.func_attr({"tir_var_upper_bound": {"m": 16, "n": 2048}})
        with R.dataflow():
            s = R.shape_of(x)
            z = R.match_cast(y, R.Tensor((m, k), dtype="float32"))
            flat: R.Tensor((n * 4,), dtype="float32") = R.flatten(x)
            zf = R.flatten(z)
            R.output(s, flat, zf)
        _ = R.match_cast(s, R.Shape([n, 4]))
        return flat
