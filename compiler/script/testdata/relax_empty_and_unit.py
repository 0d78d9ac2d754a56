@I.ir_module
class Module:
    @R.function
    def main() -> R.Tuple:
        with R.dataflow():
            R.output()
        u = R.tuple()
        return u
