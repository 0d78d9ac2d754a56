@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tuple(R.Tensor((4, 4), dtype="float32"), R.Object):
        with R.dataflow():
            y = R.call_dps_packed("my.matmul", (x, x), out_sinfo=R.Tensor((4, 4), dtype="float32"))
            z = R.call_pure_packed("my.identity", y, sinfo_args=R.Tensor((4, 4), dtype="float32"))
            R.output(z)
        f = R.ExternFunc("my.side_effect")
        w = R.call_packed("my.side_effect", z, R.prim_value(1))
        q = R.call_packed("my.query")
        out = (z, q)
        return out
