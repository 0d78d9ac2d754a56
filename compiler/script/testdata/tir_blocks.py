@I.ir_module
class Module:
    @T.prim_func
    def blocks(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16,), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            acc = T.alloc_buffer((16,), "float32", scope="local")
            for i in range(16):
                for k in range(16):
                    with T.block("reduce"):
                        vi = T.axis.spatial(16, i)
                        vk = T.axis.reduce((0, 16), k)
                        T.where(i < 15 or k > 0)
                        T.reads(A[vi, vk])
                        T.writes(acc[vi])
                        T.block_attr({"meta_schedule.tiling_structure": "SSRSRS", "weights": [1, 2, 3]})
                        with T.init():
                            acc[vi] = T.float32(0)
                        acc[vi] = acc[vi] + A[vi, vk]
            for i in range(16):
                with T.block("copy"):
                    vi = T.axis.opaque(16, i)
                    T.reads(acc[vi])
                    T.writes(C[vi:vi + 1])
                    row = T.match_buffer(A[vi, 0:16], (16,), "float32")
                    C[vi] = acc[vi] + row[0]
