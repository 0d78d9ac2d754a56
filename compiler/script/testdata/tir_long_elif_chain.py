# A hostile-input class (issue 52): 64 elif branches, a seed the parser fuzzer grows.
@I.ir_module
class Module:
    @T.prim_func
    def long_elif_chain(A: T.Buffer((64,), "int32")):
        for i in range(64):
            if i == 0:
                A[i] = 0
            elif i == 1:
                A[i] = 3
            elif i == 2:
                A[i] = 6
            elif i == 3:
                A[i] = 9
            elif i == 4:
                A[i] = 12
            elif i == 5:
                A[i] = 15
            elif i == 6:
                A[i] = 18
            elif i == 7:
                A[i] = 21
            elif i == 8:
                A[i] = 24
            elif i == 9:
                A[i] = 27
            elif i == 10:
                A[i] = 30
            elif i == 11:
                A[i] = 33
            elif i == 12:
                A[i] = 36
            elif i == 13:
                A[i] = 39
            elif i == 14:
                A[i] = 42
            elif i == 15:
                A[i] = 45
            elif i == 16:
                A[i] = 48
            elif i == 17:
                A[i] = 51
            elif i == 18:
                A[i] = 54
            elif i == 19:
                A[i] = 57
            elif i == 20:
                A[i] = 60
            elif i == 21:
                A[i] = 63
            elif i == 22:
                A[i] = 66
            elif i == 23:
                A[i] = 69
            elif i == 24:
                A[i] = 72
            elif i == 25:
                A[i] = 75
            elif i == 26:
                A[i] = 78
            elif i == 27:
                A[i] = 81
            elif i == 28:
                A[i] = 84
            elif i == 29:
                A[i] = 87
            elif i == 30:
                A[i] = 90
            elif i == 31:
                A[i] = 93
            elif i == 32:
                A[i] = 96
            elif i == 33:
                A[i] = 99
            elif i == 34:
                A[i] = 102
            elif i == 35:
                A[i] = 105
            elif i == 36:
                A[i] = 108
            elif i == 37:
                A[i] = 111
            elif i == 38:
                A[i] = 114
            elif i == 39:
                A[i] = 117
            elif i == 40:
                A[i] = 120
            elif i == 41:
                A[i] = 123
            elif i == 42:
                A[i] = 126
            elif i == 43:
                A[i] = 129
            elif i == 44:
                A[i] = 132
            elif i == 45:
                A[i] = 135
            elif i == 46:
                A[i] = 138
            elif i == 47:
                A[i] = 141
            elif i == 48:
                A[i] = 144
            elif i == 49:
                A[i] = 147
            elif i == 50:
                A[i] = 150
            elif i == 51:
                A[i] = 153
            elif i == 52:
                A[i] = 156
            elif i == 53:
                A[i] = 159
            elif i == 54:
                A[i] = 162
            elif i == 55:
                A[i] = 165
            elif i == 56:
                A[i] = 168
            elif i == 57:
                A[i] = 171
            elif i == 58:
                A[i] = 174
            elif i == 59:
                A[i] = 177
            elif i == 60:
                A[i] = 180
            elif i == 61:
                A[i] = 183
            elif i == 62:
                A[i] = 186
            elif i == 63:
                A[i] = 189
            else:
                A[i] = -1
