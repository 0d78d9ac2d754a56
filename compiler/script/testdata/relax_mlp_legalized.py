# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def matmul(input: T.Buffer((T.int64(4), T.int64(64)), "float32"), lv: T.Buffer((T.int64(64), T.int64(32)), "float32"), matmul: T.Buffer((T.int64(4), T.int64(32)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        for i0, i1, k in T.grid(T.int64(4), T.int64(32), T.int64(64)):
            with T.block("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(input[v_i0, v_k], lv[v_k, v_i1])
                T.writes(matmul[v_i0, v_i1])
                with T.init():
                    matmul[v_i0, v_i1] = T.float32(0.0)
                matmul[v_i0, v_i1] = matmul[v_i0, v_i1] + input[v_i0, v_k] * lv[v_k, v_i1]

    @T.prim_func(private=True)
    def relu(lv2: T.Buffer((T.int64(4), T.int64(32)), "float32"), compute: T.Buffer((T.int64(4), T.int64(32)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        for i0, i1 in T.grid(T.int64(4), T.int64(32)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv2[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.max(lv2[v_i0, v_i1], T.float32(0.0))

    @R.function
    def main(input: R.Tensor((4, 64), dtype="float32"), w: R.Tensor((64, 32), dtype="float32")) -> R.Tensor((4, 32), dtype="float32"):
        R.func_attr({"num_input": 1})
        cls = Module
        with R.dataflow():
            lv1 = R.call_tir(cls.matmul, (input, w), out_sinfo=R.Tensor((4, 32), dtype="float32"))
            lv3 = R.call_tir(cls.relu, (lv1,), out_sinfo=R.Tensor((4, 32), dtype="float32"))
            gv = lv3
            R.output(gv)
        return gv
