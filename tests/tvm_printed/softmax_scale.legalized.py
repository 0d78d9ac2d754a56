# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def cast(x: T.Buffer((T.int64(4), T.int64(16)), "float32"), compute: T.Buffer((T.int64(4), T.int64(16)), "int32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        for i0, i1 in T.grid(T.int64(4), T.int64(16)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.Cast("int32", x[v_i0, v_i1] * T.float32(10.0))

    @T.prim_func(private=True)
    def multiply(lv: T.Buffer((T.int64(4), T.int64(16)), "float32"), s: T.Buffer((), "float32"), T_multiply: T.Buffer((T.int64(4), T.int64(16)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(16)):
            with T.block("T_multiply"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv[v_ax0, v_ax1], s[()])
                T.writes(T_multiply[v_ax0, v_ax1])
                T_multiply[v_ax0, v_ax1] = lv[v_ax0, v_ax1] * s[()]

    @T.prim_func(private=True)
    def softmax(x: T.Buffer((T.int64(4), T.int64(16)), "float32"), T_softmax_norm: T.Buffer((T.int64(4), T.int64(16)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        T_softmax_maxelem = T.alloc_buffer((T.int64(4),))
        T_softmax_exp = T.alloc_buffer((T.int64(4), T.int64(16)))
        T_softmax_expsum = T.alloc_buffer((T.int64(4),))
        for i0, k in T.grid(T.int64(4), T.int64(16)):
            with T.block("T_softmax_maxelem"):
                v_i0, v_k = T.axis.remap("SR", [i0, k])
                T.reads(x[v_i0, v_k])
                T.writes(T_softmax_maxelem[v_i0])
                with T.init():
                    T_softmax_maxelem[v_i0] = T.float32(-340282346638528859811704183484516925440.0)
                T_softmax_maxelem[v_i0] = T.max(T_softmax_maxelem[v_i0], x[v_i0, v_k])
        for i0, i1 in T.grid(T.int64(4), T.int64(16)):
            with T.block("T_softmax_exp"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1], T_softmax_maxelem[v_i0])
                T.writes(T_softmax_exp[v_i0, v_i1])
                T_softmax_exp[v_i0, v_i1] = T.exp(x[v_i0, v_i1] - T_softmax_maxelem[v_i0])
        for i0, k in T.grid(T.int64(4), T.int64(16)):
            with T.block("T_softmax_expsum"):
                v_i0, v_k = T.axis.remap("SR", [i0, k])
                T.reads(T_softmax_exp[v_i0, v_k])
                T.writes(T_softmax_expsum[v_i0])
                with T.init():
                    T_softmax_expsum[v_i0] = T.float32(0.0)
                T_softmax_expsum[v_i0] = T_softmax_expsum[v_i0] + T_softmax_exp[v_i0, v_k]
        for i0, i1 in T.grid(T.int64(4), T.int64(16)):
            with T.block("T_softmax_norm"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(T_softmax_exp[v_i0, v_i1], T_softmax_expsum[v_i0])
                T.writes(T_softmax_norm[v_i0, v_i1])
                T.block_attr({"axis": 1})
                T_softmax_norm[v_i0, v_i1] = T_softmax_exp[v_i0, v_i1] / T_softmax_expsum[v_i0]

    @R.function
    def main(x: R.Tensor((4, 16), dtype="float32"), s: R.Tensor((), dtype="float32")) -> R.Tuple(R.Tensor((4, 16), dtype="float32"), R.Tensor((4, 16), dtype="int32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.softmax, (x,), out_sinfo=R.Tensor((4, 16), dtype="float32"))
            lv1 = R.call_tir(cls.multiply, (lv, s), out_sinfo=R.Tensor((4, 16), dtype="float32"))
            lv2 = R.call_tir(cls.cast, (x,), out_sinfo=R.Tensor((4, 16), dtype="int32"))
            gv: R.Tuple(R.Tensor((4, 16), dtype="float32"), R.Tensor((4, 16), dtype="int32")) = lv1, lv2
            R.output(gv)
        return gv
