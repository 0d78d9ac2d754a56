# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2, 3), dtype="float32"), y: R.Tensor(("n", 6), dtype="float32"), z: R.Tensor((6,), dtype="float32")) -> R.Tuple(R.Tensor(("n + 1", 6), dtype="float32"), R.Tensor(("n * 4",), dtype="float32"), R.Tensor(("n * 8",), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n * 6,), dtype="float32") = R.reshape(x, R.shape([n * 6]))
            lv: R.Tensor((n * 6 + 6,), dtype="float32") = R.concat((a, z), axis=0)
            b: R.Tensor((n + 1, 6), dtype="float32") = R.reshape(lv, R.shape([n + 1, 6]))
            lv1: R.Tensor((n, 6), dtype="float32") = R.reshape(a, R.shape([n, 6]))
            c: R.Tensor((n * 2, 6), dtype="float32") = R.concat((lv1, y), axis=0)
            d: R.Tensor((n * 2, 6), dtype="float32") = R.add(c, c)
            e: R.Tuple(R.Tensor((n * 2, 2), dtype="float32"), R.Tensor((n * 2, 4), dtype="float32")) = R.split(d, indices_or_sections=[2], axis=1)
            f: R.Tensor((n * 2, 2), dtype="float32") = e[0]
            g: R.Tensor((n * 2, 4), dtype="float32") = e[1]
            h: R.Tensor((n * 4,), dtype="float32") = R.reshape(f, R.shape([n * 4]))
            i: R.Tensor((n * 8,), dtype="float32") = R.flatten(g)
            gv: R.Tuple(R.Tensor((n + 1, 6), dtype="float32"), R.Tensor((n * 4,), dtype="float32"), R.Tensor((n * 8,), dtype="float32")) = b, h, i
            R.output(gv)
        return gv
