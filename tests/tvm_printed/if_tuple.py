# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), flag: R.Tensor((), dtype="bool")) -> R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")):
        if flag:
            lv: R.Tensor((4,), dtype="float32") = R.multiply(x, R.const(2.0, "float32"))
            y: R.Tensor((4,), dtype="float32") = lv
        else:
            lv1: R.Tensor((4,), dtype="float32") = R.negative(x)
            y: R.Tensor((4,), dtype="float32") = lv1
        t: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = y, x
        a: R.Tensor((4,), dtype="float32") = t[0]
        b: R.Tensor((4,), dtype="float32") = t[1]
        c: R.Tensor((4,), dtype="float32") = R.add(a, b)
        gv: R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")) = c, a
        return gv
