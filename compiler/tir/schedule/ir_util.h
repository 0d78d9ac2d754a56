// What the schedule primitives share: finding blocks and loops, rebuilding a function body with
// statements replaced or removed, access regions, and affine forms of index expressions.
// Internal to compiler/tir/schedule.
#ifndef KILN_COMPILER_TIR_SCHEDULE_IR_UTIL_H_
#define KILN_COMPILER_TIR_SCHEDULE_IR_UTIL_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/tir_stmt.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir::schedule_util {

using ir::PrimExpr;
using ir::Stmt;

// The statements from `root` down to the first one `match` accepts, inclusive; empty if none.
std::vector<Stmt> PathTo(const Stmt& root, const std::function<bool(const Stmt&)>& match);
// ... ending at the BlockRealize of the block named `name`.
std::vector<Stmt> PathToBlock(const Stmt& root, const std::string& name);
// ... ending at the For of `var`.
std::vector<Stmt> PathToLoop(const Stmt& root, const ir::VarNode* var);

// `root` with each key statement replaced by its value; a null value removes the statement,
// and loops, sequences and blocks left empty by it go too. Nested sequences are flattened.
Stmt Rebuild(const Stmt& root, const std::map<const ir::StmtNode*, Stmt>& replacements);

// A new loop node with `loop`'s fields, for the caller to change and then own (like CopyBlock).
ir::ForNode* CopyFor(const ir::ForNode& loop);
// A copy of `loop` (kind, thread, annotations) around another body.
Stmt WithLoopBody(const ir::ForNode& loop, Stmt body);

// Trace names of random variables: "b3", "l0", "v7".
std::string RvName(BlockRV rv);
std::string RvName(LoopRV rv);
std::string RvName(ExprRV rv);

// The loops between the innermost block on `path` (before its last element) and the last
// element, outermost first.
std::vector<const ir::ForNode*> LoopsInScope(const std::vector<Stmt>& path);
// The index in `path` of that innermost enclosing block, or -1.
int ScopeIndex(const std::vector<Stmt>& path);
// The block realizes reachable from `s` without entering another block, in program order.
std::vector<const ir::BlockRealizeNode*> ChildRealizes(const Stmt& s);
// Every block in `root`, nested ones included, in program order.
std::vector<const ir::BlockNode*> AllBlocks(const Stmt& root);

// The top-level statement of `scope_body` (the element of its sequence, or itself) that
// contains `node`.
const ir::StmtNode* TopLevelStmt(const Stmt& scope_body, const ir::StmtNode* node);

// Where a block sits: its path, its scope (the enclosing block, whose body holds it) and the
// top-level statement of that scope containing it.
struct Place {
  std::vector<Stmt> path;
  const ir::BlockRealizeNode* realize = nullptr;
  const ir::BlockNode* block = nullptr;
  const ir::BlockNode* scope = nullptr;  // null: directly in the function body
  Stmt scope_body;
  const ir::StmtNode* top = nullptr;
};
// The block named `name`, which must exist.
Place Locate(const ir::PrimFunc& f, const std::string& name);
// A function whose body is a root block, so that new buffers have a block to live in.
ir::PrimFunc WithRootBlock(const ir::PrimFunc& f);
// Replaces the scope block (or the function body) of `place` after its body changed and,
// optionally, with one more allocation.
ir::PrimFunc WithScopeBody(const ir::PrimFunc& f, const Place& place, Stmt body,
                           ir::Buffer allocate);
// The single element of `buffer` at `indices`, as a region.
ir::BufferRegion PointRegion(const ir::Buffer& buffer, const std::vector<PrimExpr>& indices);
// A block `name` with one spatial iter var per dimension of `shape` (v0, v1, ...), each bound
// to its own new serial loop over the dimension (ax0, ax1, ... fresh in `names`), as the loop
// nest; `fill` sets the block's reads, writes and body from the iter vars.
Stmt GridBlock(const std::string& name, const std::vector<PrimExpr>& shape,
               std::set<std::string>* names,
               const std::function<void(const std::vector<PrimExpr>&, ir::BlockNode*)>& fill);

// True when `buffer` is bound to a parameter of `f` (its layout and scope are the caller's).
bool IsParam(const ir::PrimFunc& f, const ir::BufferNode* buffer);
// A new buffer node with `b`'s fields (the same storage), for the caller to change and own.
ir::BufferNode* CopyBuffer(const ir::Buffer& b);

// Names of every block in `root`.
std::set<std::string> BlockNames(const Stmt& root);

// Buffers a block loads from and stores to in its body and init.
std::set<const ir::BufferNode*> LoadedBuffers(const ir::BlockNode& block);
std::set<const ir::BufferNode*> StoredBuffers(const ir::BlockNode& block);
// Read regions derived from the loads in `block` (body and init): a point per buffer when
// every load of it agrees, else the span of constant offsets, else the whole buffer.
std::vector<ir::BufferRegion> DeriveReadRegions(const ir::BlockNode& block);

// e = sum(coeffs[v] * v) + rest, where the sum covers the variables of `vars` and `rest` uses
// none of them; nullopt when `e` is not affine in them.
struct AffineForm {
  std::map<const ir::VarNode*, int64_t> coeffs;
  PrimExpr rest;  // null for 0
};
std::optional<AffineForm> Affine(const PrimExpr& e, const std::set<const ir::VarNode*>& vars);

// a + b and a * b without the identities (0 + x, 1 * x).
PrimExpr Add(const PrimExpr& a, const PrimExpr& b);
PrimExpr Mul(const PrimExpr& a, int64_t b);
PrimExpr And(const PrimExpr& a, const PrimExpr& b);
bool IsConst(const PrimExpr& e, int64_t value);

// `s` with the loads and stores of the buffers in `map` redirected (regions and allocations
// are the caller's).
Stmt ReplaceBuffers(const Stmt& s, const std::map<const ir::BufferNode*, ir::Buffer>& map);

// The dimension of each block iter var in `indices`, where every index is a distinct iter var of
// `block` (a store `buffer[v0, v1, ...]`); nullopt otherwise.
std::optional<std::map<const ir::VarNode*, size_t>> DimsOfIterVars(
    const std::vector<PrimExpr>& indices, const ir::BlockNode& block);

// A name not in `used` (base, base_1, base_2, ...), added to it.
std::string FreshName(const std::string& base, std::set<std::string>* used);
// Names of every variable and block in `f`.
std::set<std::string> UsedNames(const ir::PrimFunc& f);

}  // namespace kiln::tir::schedule_util

#endif  // KILN_COMPILER_TIR_SCHEDULE_IR_UTIL_H_
