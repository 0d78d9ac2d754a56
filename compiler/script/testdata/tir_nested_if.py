@I.ir_module
class Module:
    @T.prim_func
    def nested_if(A: T.Buffer((8,), "int32")):
        for i in range(8):
            if i < 2:
                A[i] = 0
            elif i < 4:
                A[i] = 1
            else:
                if i == 7:
                    A[i] = -1
        for i in range(8):
            if not (A[i] > 0 and A[i] < 5):
                A[i] = A[i] * -3 + (A[i] - 1) * (A[i] + 1)
        for i in range(8):
            if i != 3 and i <= 6 and i >= 1:
                A[i] = 5
