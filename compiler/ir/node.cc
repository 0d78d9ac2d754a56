#include "compiler/ir/node.h"

#include <algorithm>

namespace kiln::ir {

const char* NodeKindName(NodeKind kind) {
  switch (kind) {
#define KILN_KIND_NAME(Name) \
  case NodeKind::k##Name:    \
    return #Name;
    KILN_ALL_NODE_KINDS(KILN_KIND_NAME)
#undef KILN_KIND_NAME
    case NodeKind::kNumKinds:
      break;
  }
  return "?";
}

void DeleteNode(const Object* node) {
  thread_local bool deleting = false;
  thread_local std::vector<const Object*> queued;
  if (deleting) {
    queued.push_back(node);
    return;
  }
  deleting = true;
  delete node;
  while (!queued.empty()) {
    const Object* next = queued.back();
    queued.pop_back();
    delete next;
  }
  deleting = false;
}

void ArrayNode::VisitFields(FieldVisitor& v) const { v.Visit("items", items); }
DictAttrNode::DictAttrNode(Attrs entries)
    : Object(NodeKind::kDictAttr), entries(CanonicalAttrs(std::move(entries))) {}
void DictAttrNode::VisitFields(FieldVisitor& v) const { v.Visit("entries", entries); }

std::vector<FieldVisitor::Field> FieldsOf(const Object& node) {
  FieldVisitor v;
  node.VisitFields(v);
  return v.fields();
}

ObjectRef GetAttr(const Attrs& attrs, absl::string_view key) {
  for (const auto& [k, value] : attrs) {
    if (k == key) return value;
  }
  return nullptr;
}

Attrs WithAttr(Attrs attrs, std::string key, ObjectRef value) {
  auto it =
      std::lower_bound(attrs.begin(), attrs.end(), key,
                       [](const auto& entry, const std::string& k) { return entry.first < k; });
  if (it != attrs.end() && it->first == key) {
    it->second = std::move(value);
  } else {
    attrs.insert(it, {std::move(key), std::move(value)});
  }
  return attrs;
}

Attrs CanonicalAttrs(Attrs attrs) {
  if (std::is_sorted(attrs.begin(), attrs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; })) {
    return attrs;
  }
  Attrs sorted;
  for (auto& [key, value] : attrs) sorted = WithAttr(std::move(sorted), key, std::move(value));
  return sorted;
}

}  // namespace kiln::ir
