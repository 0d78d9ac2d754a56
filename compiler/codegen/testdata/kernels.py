# Kernels for compiler/codegen/kernels_test.cc: each is compiled with the default schedule,
# run, and compared with a plain C++ reference.
@I.ir_module
class Module:
    @T.prim_func
    def add_int8(A: T.Buffer((3, 5), "int8"), B: T.Buffer((5,), "int8"), C: T.Buffer((3, 5), "int8")):
        for i, j in T.grid(3, 5):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vj])
                T.writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] + B[vj]

    @T.prim_func
    def mul_f64(A: T.Buffer((7,), "float64"), B: T.Buffer((7,), "float64"), C: T.Buffer((7,), "float64")):
        for i in range(7):
            with T.block("C"):
                vi = T.axis.spatial(7, i)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] * B[vi] + T.float64(0.5)

    @T.prim_func
    def greater(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32"), C: T.Buffer((6,), "bool")):
        for i in range(6):
            with T.block("C"):
                vi = T.axis.spatial(6, i)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] > B[vi] and A[vi] > T.float32(0)

    @T.prim_func
    def row_sum(A: T.Buffer((5, 33), "float32"), S: T.Buffer((5,), "float32")):
        for i, k in T.grid(5, 33):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(S[vi])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]

    @T.prim_func
    def softmax(A: T.Buffer((4, 16), "float32"), Y: T.Buffer((4, 16), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            row_max = T.alloc_buffer((4,), "float32")
            row_sum = T.alloc_buffer((4,), "float32")
            for i, k in T.grid(4, 16):
                with T.block("max"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    T.reads(A[vi, vk])
                    T.writes(row_max[vi])
                    with T.init():
                        row_max[vi] = T.float32("-inf")
                    row_max[vi] = T.max(row_max[vi], A[vi, vk])
            for i, j in T.grid(4, 16):
                with T.block("exp"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(A[vi, vj], row_max[vi])
                    T.writes(Y[vi, vj])
                    Y[vi, vj] = T.exp(A[vi, vj] - row_max[vi])
            for i, k in T.grid(4, 16):
                with T.block("sum"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    T.reads(Y[vi, vk])
                    T.writes(row_sum[vi])
                    with T.init():
                        row_sum[vi] = T.float32(0)
                    row_sum[vi] = row_sum[vi] + Y[vi, vk]
            for i, j in T.grid(4, 16):
                with T.block("norm"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(Y[vi, vj], row_sum[vi])
                    T.writes(Y[vi, vj])
                    Y[vi, vj] = Y[vi, vj] / row_sum[vi]

    @T.prim_func
    def conv2d_nchw(X: T.Buffer((1, 3, 8, 8), "float32"), W: T.Buffer((4, 3, 3, 3), "float32"), Y: T.Buffer((1, 4, 6, 6), "float32")):
        for n, k, oh, ow, c, r, s in T.grid(1, 4, 6, 6, 3, 3, 3):
            with T.block("conv"):
                vn, vk, voh, vow, vc, vr, vs = T.axis.remap("SSSSRRR", [n, k, oh, ow, c, r, s])
                T.reads(X[vn, vc, voh + vr, vow + vs], W[vk, vc, vr, vs])
                T.writes(Y[vn, vk, voh, vow])
                with T.init():
                    Y[vn, vk, voh, vow] = T.float32(0)
                Y[vn, vk, voh, vow] = Y[vn, vk, voh, vow] + X[vn, vc, voh + vr, vow + vs] * W[vk, vc, vr, vs]

    @T.prim_func
    def max_pool(X: T.Buffer((1, 2, 8, 8), "float32"), Y: T.Buffer((1, 2, 4, 4), "float32")):
        for n, c, oh, ow, r, s in T.grid(1, 2, 4, 4, 2, 2):
            with T.block("pool"):
                vn, vc, voh, vow, vr, vs = T.axis.remap("SSSSRR", [n, c, oh, ow, r, s])
                T.reads(X[vn, vc, voh * 2 + vr, vow * 2 + vs])
                T.writes(Y[vn, vc, voh, vow])
                with T.init():
                    Y[vn, vc, voh, vow] = T.float32("-inf")
                Y[vn, vc, voh, vow] = T.max(Y[vn, vc, voh, vow], X[vn, vc, voh * 2 + vr, vow * 2 + vs])

    @T.prim_func
    def matmul_tiled(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 64), "float32"), C: T.Buffer((8, 64), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i, j, k in T.grid(8, 64, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def vector_ops(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), G: T.Buffer((16,), "float32")):
        for i in range(16):
            B[T.Ramp(i * 4, 1, 4)] = T.exp(A[T.Ramp(i * 4, 1, 4)]) + T.Broadcast(T.float32(1), 4)
        for i in range(4):
            G[T.Ramp(i * 4, 1, 4)] = A[T.Ramp(i, 16, 4)]

    @T.prim_func
    def big_scratch(A: T.Buffer((131072,), "float32"), B: T.Buffer((131072,), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            tmp = T.alloc_buffer((131072,), "float32")
            for i in range(131072):
                with T.block("t"):
                    vi = T.axis.spatial(131072, i)
                    T.reads(A[vi])
                    T.writes(tmp[vi])
                    tmp[vi] = A[vi] * T.float32(2)
            for i in range(131072):
                with T.block("b"):
                    vi = T.axis.spatial(131072, i)
                    T.reads(tmp[vi])
                    T.writes(B[vi])
                    B[vi] = tmp[vi] + T.float32(1)

    @T.prim_func
    def strided_copy(A: T.Buffer((4, 8), "float32", strides=(16, 1)), B: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj]

    @T.prim_func
    def dyn_scratch(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        with T.decl_buffer((n,), "float32") as tmp:
            for i in range(n):
                tmp[i] = A[i] * T.float32(3)
            for i in range(n):
                B[i] = tmp[n - 1 - i]

    @T.prim_func
    def matmul_packed(A: T.Buffer((64, 48), "float32"), B: T.Buffer((48, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        for i, j, k in T.grid(64, 64, 48):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def dense(A: T.Buffer((32, 24), "float32"), W: T.Buffer((48, 24), "float32"), C: T.Buffer((32, 48), "float32")):
        for i, j, k in T.grid(32, 48, 24):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], W[vj, vk])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * W[vj, vk]

    @T.prim_func
    def batch_matmul(A: T.Buffer((2, 16, 24), "float32"), B: T.Buffer((2, 24, 32), "float32"), C: T.Buffer((2, 16, 32), "float32")):
        for b, i, j, k in T.grid(2, 16, 32, 24):
            with T.block("C"):
                vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                T.reads(A[vb, vi, vk], B[vb, vk, vj])
                T.writes(C[vb, vi, vj])
                with T.init():
                    C[vb, vi, vj] = T.float32(0)
                C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]

    @T.prim_func
    def matmul_accumulate(A: T.Buffer((20, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((20, 8), "float32")):
        for i, j, k in T.grid(20, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def conv2d_tiled(X: T.Buffer((1, 4, 10, 18), "float32"), W: T.Buffer((8, 4, 3, 3), "float32"), Y: T.Buffer((1, 8, 8, 16), "float32")):
        for n, k, oh, ow, c, r, s in T.grid(1, 8, 8, 16, 4, 3, 3):
            with T.block("conv"):
                vn, vk, voh, vow, vc, vr, vs = T.axis.remap("SSSSRRR", [n, k, oh, ow, c, r, s])
                T.reads(X[vn, vc, voh + vr, vow + vs], W[vk, vc, vr, vs])
                T.writes(Y[vn, vk, voh, vow])
                with T.init():
                    Y[vn, vk, voh, vow] = T.float32(0)
                Y[vn, vk, voh, vow] = Y[vn, vk, voh, vow] + X[vn, vc, voh + vr, vow + vs] * W[vk, vc, vr, vs]

    @T.prim_func
    def row_temp(A: T.Buffer((32, 64), "float32"), B: T.Buffer((32, 64), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            tmp = T.alloc_buffer((32, 64), "float32")
            for i in range(32):
                for j in range(64):
                    with T.block("t"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(A[vi, vj])
                        T.writes(tmp[vi, vj])
                        tmp[vi, vj] = A[vi, vj] * T.float32(2)
                for j in range(64):
                    with T.block("b"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(tmp[vi, vj], tmp[vi, 63 - vj])
                        T.writes(B[vi, vj])
                        B[vi, vj] = tmp[vi, vj] + tmp[vi, 63 - vj]
