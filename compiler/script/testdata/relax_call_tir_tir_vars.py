@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((T.int64(8),), "float32"), C: T.Buffer((T.int64(8),), "float32"), k: T.int64):
        for i in range(T.int64(8)):
            with T.block("fill"):
                vi = T.axis.spatial(T.int64(8), i)
                T.reads(A[vi])
                T.writes(B[vi], C[vi])
                B[vi] = A[vi] + T.Cast("float32", k)
                C[vi] = A[vi]

    @R.function
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tuple(R.Tensor((8,), dtype="float32"), R.Tensor((8,), dtype="float32")):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.fill, (x,), out_sinfo=[R.Tensor((8,), dtype="float32"), R.Tensor((8,), dtype="float32")], tir_vars=R.shape([3]))
            R.output(gv)
        return gv
