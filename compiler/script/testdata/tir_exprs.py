@I.ir_module
class Module:
    @T.prim_func
    def exprs(X: T.Buffer((8,), "float32"), Y: T.Buffer((8,), "float16"), Z: T.Buffer((8,), "int8"), W: T.Buffer((32,), "float32")):
        for i in range(8):
            X[i] = T.exp(X[i]) + T.log(X[i]) - T.sqrt(X[i]) * T.tanh(X[i]) / T.erf(X[i])
            X[i] = T.sigmoid(X[i]) + T.fabs(X[i]) + T.floor(X[i]) + T.ceil(X[i]) + T.round(X[i])
            X[i] = T.pow(X[i], T.float32(2)) + T.max(X[i], T.float32(0)) - T.min(X[i], T.float32(-1.5e-3))
            Y[i] = T.Cast("float16", X[i]) + T.float16(0.25)
            Z[i] = T.Select(X[i] > T.float32(0), T.int8(1), T.int8(-1))
            X[i] = T.Let(x * x, where={x: X[i] + T.float32(1)})
            W[T.Ramp(i * 4, 1, 4)] = T.Broadcast(X[i], 4)
            Z[i] = T.Cast("int8", T.floordiv(i, 2) + T.floormod(i, 3) + T.truncmod(i, 5) + i // 2 + i % 3)
            X[i] = T.float32("inf") + T.float32("-inf") * T.float32("nan")
