@I.ir_module
class Module:
    I.module_attrs({"target": "llvm -mcpu=native", "opt_level": 3})

    @R.function(private=True)
    def helper(s: R.Shape(ndim=2), p: R.Prim("int64"), q: R.Prim(value="v"), o: R.Object, t: R.Tensor(dtype="float32", ndim=-1), u: R.Tensor, f: R.Callable([R.Tensor((2,), dtype="float32")], R.Object, purity=False)) -> R.Tuple(R.Shape(), R.Prim("int64")):
        v = T.int64()
        out = (s, R.prim_value(1))
        return out

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        R.func_attr({"num_input": 1, "relax.force_pure": T.bool(True)})
        return x
