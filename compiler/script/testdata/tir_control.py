@I.ir_module
class Module:
    @T.prim_func
    def control(A: T.Buffer((10,), "int32"), n: T.int32):
        T.func_attr({"global_symbol": "control", "tir.noalias": T.bool(True), "ratio": T.float32(0.5)})
        with T.LetStmt(n * 2) as m:
            with T.Assert(m > 0, "m must be positive"):
                A[0] = m
            if n > 3:
                A[1] = 1
            else:
                A[1] = 2
            i: T.int32 = 0
            while i < 10:
                A[i] = T.if_then_else(i % 2 == 0, i // 2, T.truncdiv(i, 3))
        assert n < 100, "n is too large"
        with T.attr(A, "storage_alignment", 64):
            T.evaluate(T.call_extern("int32", "printf", "done %d", n))
