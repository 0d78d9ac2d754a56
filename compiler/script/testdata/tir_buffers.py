@I.ir_module
class Module:
    @T.prim_func
    def buffers(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=8, align=128), n: T.int32):
        with T.decl_buffer((16,), "float32", scope="shared") as S:
            with T.decl_buffer((n,), "int32", elem_offset=None) as D:
                for i in range(16):
                    S[i] = A[i, i]
                    D[i % n] = i
        with T.seq():
            T.evaluate(0)
            T.evaluate(1)
