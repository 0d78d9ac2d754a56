@I.ir_module
class Module:
    @T.prim_func
    def kinds(A: T.Buffer((64, 64), "float32")):
        for i in T.parallel(64):
            for j in T.vectorized(0, 16):
                A[i, j] = A[i, j] * T.float32(2)
            for j in T.unroll(16, 32, annotations={"pragma_unroll_explicit": 1}):
                A[i, j] = T.float32(1)
            for j in T.serial(32, 64):
                A[i, j] = T.float32(0)
        for b in T.thread_binding(4, thread="blockIdx.x"):
            for t in T.thread_binding(16, thread="threadIdx.x"):
                A[b, t] = A[b, t] + T.float32(1)
