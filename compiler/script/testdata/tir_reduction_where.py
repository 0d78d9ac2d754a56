@I.ir_module
class Module:
    @T.prim_func
    def pad_sum(A: T.Buffer((30,), "float32"), S: T.Buffer((1,), "float32")):
        for io, ii in T.grid(8, 4):
            with T.block("sum"):
                vk = T.axis.reduce(30, io * 4 + ii)
                T.where(io * 4 + ii < 30)
                T.reads(A[vk])
                T.writes(S[0])
                with T.init():
                    S[0] = T.float32(0)
                S[0] = S[0] + A[vk]
