# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add_offset(var_x: T.handle, var_out: T.handle, m: T.int64):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(2)))
        out = T.match_buffer(var_out, (n * T.int64(2),))
        # with T.block("root"):
        for i in range(n * T.int64(2)):
            with T.block("out"):
                vi = T.axis.spatial(n * T.int64(2), i)
                T.reads(x[vi // T.int64(2), vi % T.int64(2)])
                T.writes(out[vi])
                out[vi] = x[vi // T.int64(2), vi % T.int64(2)] + T.Cast("float32", m)

    @R.function
    def main(x: R.Tensor(("n", 2), dtype="float32")) -> R.Tensor(("n * 2",), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.add_offset, (x,), out_sinfo=R.Tensor((n * 2,), dtype="float32"), tir_vars=R.shape([n + 1]))
            R.output(gv)
        return gv
