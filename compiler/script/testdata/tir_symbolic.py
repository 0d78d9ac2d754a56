@I.ir_module
class Module:
    @T.prim_func
    def scale(a: T.handle, b: T.handle, alpha: T.float32):
        n = T.int64()
        A = T.match_buffer(a, (n, T.int64(4)), "float32")
        B = T.match_buffer(b, (n * T.int64(4),), "float32")
        for i, j in T.grid(n, T.int64(4)):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi * 4 + vj])
                B[vi * 4 + vj] = A[vi, vj] * alpha
