#include "compiler/tir/schedule/trace.h"

#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace kiln::tir {

namespace {

constexpr int kTraceVersion = 1;

// Random variables of the replay, by their names in the trace.
class Replayer {
 public:
  Replayer(Schedule* sch, const v1::TraceInstruction& inst) : sch_(sch), inst_(inst) {}

  absl::Status Run(std::map<std::string, int>* rvs);

 private:
  absl::StatusOr<int> Rv(int input, char prefix) const {
    if (input >= inst_.inputs_size() || inst_.inputs(input).value_case() != v1::TraceValue::kRv) {
      return absl::InvalidArgumentError(absl::StrCat("input ", input, " is not a random variable"));
    }
    const std::string& name = inst_.inputs(input).rv();
    auto it = rvs_->find(name);
    if (name.empty() || name[0] != prefix || it == rvs_->end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown random variable '", name, "'"));
    }
    return it->second;
  }
  absl::StatusOr<BlockRV> B(int input) const {
    absl::StatusOr<int> id = Rv(input, 'b');
    if (!id.ok()) return id.status();
    return BlockRV{*id};
  }
  absl::StatusOr<LoopRV> L(int input) const {
    absl::StatusOr<int> id = Rv(input, 'l');
    if (!id.ok()) return id.status();
    return LoopRV{*id};
  }
  absl::StatusOr<int64_t> IntAttr(int k) const {
    if (k >= inst_.attrs_size() || inst_.attrs(k).value_case() != v1::TraceValue::kInt) {
      return absl::InvalidArgumentError(absl::StrCat("attribute ", k, " must be an integer"));
    }
    return inst_.attrs(k).int_();
  }
  absl::StatusOr<std::string> StrAttr(int k) const {
    if (k >= inst_.attrs_size() || inst_.attrs(k).value_case() != v1::TraceValue::kStr) {
      return absl::InvalidArgumentError(absl::StrCat("attribute ", k, " must be a string"));
    }
    return inst_.attrs(k).str();
  }
  absl::StatusOr<AnnotationValue> ValueAttr(int k) const {
    if (k < inst_.attrs_size() && inst_.attrs(k).value_case() == v1::TraceValue::kInt) {
      return AnnotationValue(inst_.attrs(k).int_());
    }
    absl::StatusOr<std::string> s = StrAttr(k);
    if (!s.ok()) return s.status();
    return AnnotationValue(*s);
  }
  bool InputIsBlock(int input) const {
    return input < inst_.inputs_size() && !inst_.inputs(input).rv().empty() &&
           inst_.inputs(input).rv()[0] == 'b';
  }
  // Binds the instruction's outputs to the ids the replay produced.
  absl::Status Bind(const std::vector<int>& ids) {
    if (static_cast<int>(ids.size()) != inst_.outputs_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "it made ", ids.size(), " random variables, the trace names ", inst_.outputs_size()));
    }
    for (size_t k = 0; k < ids.size(); ++k) (*rvs_)[inst_.outputs(static_cast<int>(k))] = ids[k];
    return absl::OkStatus();
  }
  template <typename T>
  absl::Status BindAll(const absl::StatusOr<std::vector<T>>& out) {
    if (!out.ok()) return out.status();
    std::vector<int> ids;
    for (const T& rv : *out) ids.push_back(rv.id);
    return Bind(ids);
  }
  template <typename T>
  absl::Status BindOne(const absl::StatusOr<T>& out) {
    if (!out.ok()) return out.status();
    return Bind({out->id});
  }

  Schedule* sch_;
  const v1::TraceInstruction& inst_;
  std::map<std::string, int>* rvs_ = nullptr;
};

#define KILN_TRY_ASSIGN(lhs, expr)              \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *lhs##_or

absl::Status Replayer::Run(std::map<std::string, int>* rvs) {
  rvs_ = rvs;
  const std::string& kind = inst_.kind();
  std::vector<int64_t> decision(inst_.decision().begin(), inst_.decision().end());
  if (kind == "GetBlock") {
    KILN_TRY_ASSIGN(name, StrAttr(0));
    return BindOne(sch_->GetBlock(name));
  }
  if (kind == "GetLoops") {
    KILN_TRY_ASSIGN(b, B(0));
    return BindAll(sch_->GetLoops(b));
  }
  if (kind == "GetChildBlocks") {
    if (InputIsBlock(0)) {
      KILN_TRY_ASSIGN(b, B(0));
      return BindAll(sch_->GetChildBlocks(b));
    }
    KILN_TRY_ASSIGN(l, L(0));
    return BindAll(sch_->GetChildBlocks(l));
  }
  if (kind == "GetProducers" || kind == "GetConsumers") {
    KILN_TRY_ASSIGN(b, B(0));
    return BindAll(kind == "GetProducers" ? sch_->GetProducers(b) : sch_->GetConsumers(b));
  }
  if (kind == "SamplePerfectTile") {
    KILN_TRY_ASSIGN(l, L(0));
    KILN_TRY_ASSIGN(n, IntAttr(0));
    KILN_TRY_ASSIGN(max_inner, IntAttr(1));
    std::optional<std::vector<int64_t>> d;
    if (inst_.has_decision()) d = decision;
    return BindAll(sch_->SamplePerfectTile(l, static_cast<int>(n), max_inner, d));
  }
  if (kind == "SampleCategorical") {
    std::vector<int64_t> candidates;
    std::vector<double> probabilities;
    for (const v1::TraceValue& a : inst_.attrs()) {
      if (a.value_case() == v1::TraceValue::kInt) candidates.push_back(a.int_());
      if (a.value_case() == v1::TraceValue::kReal) probabilities.push_back(a.real());
    }
    std::optional<int64_t> d;
    if (inst_.has_decision() && decision.size() == 1) d = decision[0];
    return BindOne(sch_->SampleCategorical(candidates, probabilities, d));
  }
  if (kind == "SampleComputeLocation") {
    KILN_TRY_ASSIGN(b, B(0));
    std::optional<int64_t> d;
    if (inst_.has_decision() && decision.size() == 1) d = decision[0];
    return BindOne(sch_->SampleComputeLocation(b, d));
  }
  if (kind == "Split") {
    KILN_TRY_ASSIGN(l, L(0));
    std::vector<Factor> factors;
    for (int k = 1; k < inst_.inputs_size(); ++k) {
      const v1::TraceValue& v = inst_.inputs(k);
      if (v.value_case() == v1::TraceValue::kNone) {
        factors.push_back(Factor());
      } else if (v.value_case() == v1::TraceValue::kInt) {
        factors.push_back(Factor(v.int_()));
      } else {
        KILN_TRY_ASSIGN(id, Rv(k, 'v'));
        factors.push_back(Factor(ExprRV{id}));
      }
    }
    return BindAll(sch_->Split(l, factors));
  }
  if (kind == "Fuse" || kind == "Reorder") {
    std::vector<LoopRV> loops;
    for (int k = 0; k < inst_.inputs_size(); ++k) {
      KILN_TRY_ASSIGN(l, L(k));
      loops.push_back(l);
    }
    if (kind == "Reorder") return sch_->Reorder(loops);
    return BindOne(sch_->Fuse(loops));
  }
  if (kind == "Parallel" || kind == "Vectorize" || kind == "Unroll") {
    KILN_TRY_ASSIGN(l, L(0));
    if (kind == "Parallel") return sch_->Parallel(l);
    if (kind == "Vectorize") return sch_->Vectorize(l);
    return sch_->Unroll(l);
  }
  if (kind == "Bind") {
    KILN_TRY_ASSIGN(l, L(0));
    KILN_TRY_ASSIGN(axis, StrAttr(0));
    return sch_->Bind(l, axis);
  }
  if (kind == "Annotate" || kind == "Unannotate") {
    KILN_TRY_ASSIGN(key, StrAttr(0));
    if (kind == "Annotate") {
      KILN_TRY_ASSIGN(value, ValueAttr(1));
      if (InputIsBlock(0)) {
        KILN_TRY_ASSIGN(b, B(0));
        return sch_->Annotate(b, key, value);
      }
      KILN_TRY_ASSIGN(l, L(0));
      return sch_->Annotate(l, key, value);
    }
    if (InputIsBlock(0)) {
      KILN_TRY_ASSIGN(b, B(0));
      return sch_->Unannotate(b, key);
    }
    KILN_TRY_ASSIGN(l, L(0));
    return sch_->Unannotate(l, key);
  }
  if (kind == "ComputeAt" || kind == "ReverseComputeAt") {
    KILN_TRY_ASSIGN(b, B(0));
    KILN_TRY_ASSIGN(l, L(1));
    return kind == "ComputeAt" ? sch_->ComputeAt(b, l) : sch_->ReverseComputeAt(b, l);
  }
  if (kind == "ComputeInline" || kind == "ReverseComputeInline") {
    KILN_TRY_ASSIGN(b, B(0));
    return kind == "ComputeInline" ? sch_->ComputeInline(b) : sch_->ReverseComputeInline(b);
  }
  if (kind == "CacheRead" || kind == "CacheWrite" || kind == "SetScope") {
    KILN_TRY_ASSIGN(b, B(0));
    KILN_TRY_ASSIGN(index, IntAttr(0));
    KILN_TRY_ASSIGN(scope, StrAttr(1));
    if (kind == "SetScope") return sch_->SetScope(b, static_cast<int>(index), scope);
    return BindOne(kind == "CacheRead" ? sch_->CacheRead(b, static_cast<int>(index), scope)
                                       : sch_->CacheWrite(b, static_cast<int>(index), scope));
  }
  if (kind == "DecomposeReduction") {
    KILN_TRY_ASSIGN(b, B(0));
    KILN_TRY_ASSIGN(l, L(1));
    return BindOne(sch_->DecomposeReduction(b, l));
  }
  if (kind == "Blockize") {
    KILN_TRY_ASSIGN(l, L(0));
    return BindOne(sch_->Blockize(l));
  }
  if (kind == "Tensorize") {
    KILN_TRY_ASSIGN(b, B(0));
    KILN_TRY_ASSIGN(intrin, StrAttr(0));
    return sch_->Tensorize(b, intrin);
  }
  if (kind == "StorageAlign") {
    KILN_TRY_ASSIGN(b, B(0));
    std::vector<int> v;
    for (int k = 0; k < 4; ++k) {
      KILN_TRY_ASSIGN(x, IntAttr(k));
      v.push_back(static_cast<int>(x));
    }
    return sch_->StorageAlign(b, v[0], v[1], v[2], v[3]);
  }
  if (kind == "TransformLayout") {
    // attrs: buffer index, write (0/1), n, n inner factors, then the order.
    KILN_TRY_ASSIGN(b, B(0));
    KILN_TRY_ASSIGN(index, IntAttr(0));
    KILN_TRY_ASSIGN(write, IntAttr(1));
    KILN_TRY_ASSIGN(n, IntAttr(2));
    std::vector<int64_t> factors;
    std::vector<int> order;
    for (int k = 3; k < inst_.attrs_size(); ++k) {
      KILN_TRY_ASSIGN(x, IntAttr(k));
      if (k < 3 + n) {
        factors.push_back(x);
      } else {
        order.push_back(static_cast<int>(x));
      }
    }
    return sch_->TransformLayout(b, static_cast<int>(index), write != 0, factors, order);
  }
  if (kind == "PadEinsum") {
    KILN_TRY_ASSIGN(b, B(0));
    std::vector<int64_t> padding;
    for (int k = 0; k < inst_.attrs_size(); ++k) {
      KILN_TRY_ASSIGN(x, IntAttr(k));
      padding.push_back(x);
    }
    return sch_->PadEinsum(b, padding);
  }
  if (kind == "RFactor") {
    KILN_TRY_ASSIGN(l, L(0));
    KILN_TRY_ASSIGN(axis, IntAttr(0));
    return BindOne(sch_->RFactor(l, static_cast<int>(axis)));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown instruction kind '", kind, "'"));
}

#undef KILN_TRY_ASSIGN

absl::Status CheckVersion(const v1::TraceProto& trace) {
  if (trace.version() != kTraceVersion) {
    return absl::InvalidArgumentError(absl::StrCat("trace: version ", trace.version(),
                                                   " is not supported (this build reads ",
                                                   kTraceVersion, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string TraceToJson(const v1::TraceProto& trace) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  google::protobuf::util::MessageToJsonString(trace, &json, options);
  return json;
}

absl::StatusOr<v1::TraceProto> TraceFromJson(const std::string& json) {
  v1::TraceProto trace;
  google::protobuf::util::Status s = google::protobuf::util::JsonStringToMessage(json, &trace);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("trace: not a trace in JSON: ", s.ToString()));
  }
  if (absl::Status v = CheckVersion(trace); !v.ok()) return v;
  return trace;
}

absl::StatusOr<v1::TraceProto> TraceFromBytes(const std::string& bytes) {
  v1::TraceProto trace;
  if (!trace.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("trace: not a serialized TraceProto");
  }
  if (absl::Status v = CheckVersion(trace); !v.ok()) return v;
  return trace;
}

absl::StatusOr<Schedule> ReplayTrace(const ir::IRModule& mod, const v1::TraceProto& trace) {
  if (absl::Status v = CheckVersion(trace); !v.ok()) return v;
  absl::StatusOr<Schedule> sch = Schedule::Create(mod, trace.func_name());
  if (!sch.ok()) return sch.status();
  std::map<std::string, int> rvs;
  for (int k = 0; k < trace.instructions_size(); ++k) {
    const v1::TraceInstruction& inst = trace.instructions(k);
    if (absl::Status s = Replayer(&*sch, inst).Run(&rvs); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("trace instruction ", k, " (", inst.kind(), "): ", s.message()));
    }
  }
  return sch;
}

absl::StatusOr<v1::TraceProto> WithDecision(const v1::TraceProto& trace, int index,
                                            std::vector<int64_t> decision) {
  if (index < 0 || index >= trace.instructions_size() ||
      !trace.instructions(index).has_decision()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace: instruction ", index, " is not a sampling instruction"));
  }
  v1::TraceProto out = trace;
  v1::TraceInstruction* inst = out.mutable_instructions(index);
  inst->clear_decision();
  for (int64_t d : decision) inst->add_decision(d);
  return out;
}

}  // namespace kiln::tir
