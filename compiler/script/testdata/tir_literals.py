@I.ir_module
class Module:
    @T.prim_func
    def literals(A: T.Buffer((4,), "uint8"), B: T.Buffer((4,), "bool"), C: T.Buffer((4,), "float64"), D: T.Buffer((4,), "int16")):
        A[0] = T.uint8(255)
        B[1] = T.bool(False)
        C[2] = T.float64(0.1) + T.float64(1e300)
        D[3] = T.int16(-32768) + T.int16(7)
        A[T.int64(1) - T.int64(1)] = T.Cast("uint8", T.int64(3) * T.int64(2))
