// The schedule untuned code gets, so that it is already reasonable: for each loop nest that
// drives one block through a plain remap (every iter value is a loop variable),
//   - the reduction loops move inside the spatial ones, just before the innermost spatial loop
//     (matmul i, j, k becomes i, k, j: the innermost loop walks contiguous rows of B and C);
//   - the outermost spatial loop runs in parallel;
//   - the innermost spatial loop is marked for vectorization.
// Functions with the attribute "tir.is_scheduled" are left alone.
#ifndef KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_
#define KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_

#include "compiler/ir/module.h"
#include "compiler/pass/pass.h"

namespace kiln::tir {

ir::PrimFunc ApplyDefaultSchedule(const ir::PrimFunc& f);
ir::IRModule ApplyDefaultSchedule(const ir::IRModule& mod);

// ApplyDefaultSchedule, then the attribute "tir.is_scheduled" (what the pass does to each kernel).
ir::PrimFunc ApplyDefaultScheduleAndMark(const ir::PrimFunc& f);

// The pipeline's DefaultSchedule pass: every PrimFunc not yet scheduled gets the default schedule
// and the attribute "tir.is_scheduled" (a tuned or hand-written schedule is left alone).
pass::PassPtr DefaultSchedulePass();

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_
