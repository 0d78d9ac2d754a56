// A debug printer: readable, deterministic TVMScript-flavoured text for any IR node, used in test
// failure messages and --dump-after. (The round-tripping TVMScript printer/parser is separate.)
// Variables with the same name hint are told apart by suffixes (x, x_1, ...).
#ifndef KILN_COMPILER_IR_PRINTER_H_
#define KILN_COMPILER_IR_PRINTER_H_

#include <string>

#include "compiler/ir/node.h"

namespace kiln::ir {

std::string DebugPrint(const ObjectRef& node);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_PRINTER_H_
