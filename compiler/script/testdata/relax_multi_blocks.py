@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a = R.exp(x)
            b = R.add(a, x)
            R.output(b)
        c = R.multiply(b, b)
        with R.dataflow():
            d = R.sqrt(c)
            e = R.negative(d)
            R.output(e)
        return e
