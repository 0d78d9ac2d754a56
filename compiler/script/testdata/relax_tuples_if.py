@I.ir_module
class Module:
    @R.function(pure=False)
    def main(c: R.Prim("bool"), x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        t = (x, R.shape([8]), R.prim_value(3), R.prim_value(T.int32(-2)), R.str("note"), R.dtype("int8"))
        e = R.tuple()
        one = (x,)
        first = t[0]
        nested = ((x, x), one)
        inner = nested[0][1]
        if c:
            with R.dataflow():
                a = R.exp(first)
                R.output(a)
            r: R.Tensor((8,), dtype="float32") = a
        else:
            b = R.call_packed("my.print", x, R.str("hello"), sinfo_args=R.Tensor((8,), dtype="float32"))
            r: R.Tensor((8,), dtype="float32") = b
        return r
