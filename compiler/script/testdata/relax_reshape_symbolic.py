@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n * 2", 2), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n * 2, 2]))
            s = R.shape_of(y)
            t = R.shape_to_tensor(s)
            R.output(y)
        return y
