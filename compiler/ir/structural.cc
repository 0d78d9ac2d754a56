#include "compiler/ir/structural.h"

#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {

using Field = FieldVisitor::Field;
using FieldType = FieldVisitor::Type;

// Variables and buffers: compared by binding position, never by identity.
bool IsMappedKind(NodeKind k) {
  return k == NodeKind::kVar || k == NodeKind::kRelaxVar || k == NodeKind::kDataflowVar ||
         k == NodeKind::kBuffer;
}

uint64_t DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return bits;
}

class EqualChecker {
 public:
  explicit EqualChecker(bool vars_by_identity = false) : vars_by_identity_(vars_by_identity) {}

  bool Equal(const Object* a, const Object* b) {
    if (a == nullptr || b == nullptr) return Fail(a == b, a, b);
    if (a->kind() != b->kind()) return Fail(false, a, b);
    if (vars_by_identity_ && IsMappedKind(a->kind())) return Fail(a == b, a, b, "other variable");
    if (IsMappedKind(a->kind())) {
      auto it = a_to_b_.find(a);
      if (it != a_to_b_.end()) return Fail(it->second == b, a, b, "variable bound elsewhere");
      if (b_to_a_.count(b)) return Fail(false, a, b, "variable bound elsewhere");
      a_to_b_[a] = b;
      b_to_a_[b] = a;
    }
    // A shared pair already found equal is equal again: the variable mappings its first
    // comparison made are still in place. Without this a DAG compares in exponential time.
    bool may_repeat = a->HasSeveralOwners() && !IsMappedKind(a->kind());
    if (may_repeat && equal_pairs_.contains({a, b})) return true;
    std::vector<Field> fa = FieldsOf(*a);
    std::vector<Field> fb = FieldsOf(*b);
    size_t n = std::min(fa.size(), fb.size());
    for (size_t i = 0; i < n; ++i) {
      path_.push_back({fa[i].name, -1});
      bool ok = EqualFields(fa[i], fb[i]);
      path_.pop_back();
      if (!ok) return false;
    }
    if (fa.size() != fb.size()) return Fail(false, a, b, "different field counts");
    if (may_repeat) equal_pairs_.insert({a, b});
    return true;
  }

  const std::string& mismatch() const { return mismatch_; }

 private:
  struct Step {
    const char* name;
    int64_t index;
  };

  bool EqualFields(const Field& x, const Field& y) {
    if (x.type != y.type) return Fail(false, nullptr, nullptr, "field types differ");
    switch (x.type) {
      case FieldType::kObject:
        return Equal(x.object, y.object);
      case FieldType::kObjectList:
        if (x.objects.size() != y.objects.size()) {
          return Fail(false, nullptr, nullptr,
                      absl::StrCat(x.objects.size(), " vs ", y.objects.size(), " elements"));
        }
        for (size_t i = 0; i < x.objects.size(); ++i) {
          path_.back().index = static_cast<int64_t>(i);
          if (!Equal(x.objects[i], y.objects[i])) return false;
        }
        return true;
      case FieldType::kInt:
      case FieldType::kBool:
        if (x.int_value == y.int_value) return true;
        return Fail(false, nullptr, nullptr, absl::StrCat(x.int_value, " vs ", y.int_value));
      case FieldType::kDouble:
        if (DoubleBits(x.double_value) == DoubleBits(y.double_value)) return true;
        return Fail(false, nullptr, nullptr, absl::StrCat(x.double_value, " vs ", y.double_value));
      case FieldType::kString:
        if (*x.string_value == *y.string_value) return true;
        return Fail(false, nullptr, nullptr,
                    absl::StrCat("\"", *x.string_value, "\" vs \"", *y.string_value, "\""));
      case FieldType::kDataType:
        if (x.dtype == y.dtype) return true;
        return Fail(false, nullptr, nullptr,
                    absl::StrCat(x.dtype.ToString(), " vs ", y.dtype.ToString()));
      case FieldType::kAttrs: {
        const Attrs& ax = *x.attrs;
        const Attrs& ay = *y.attrs;
        if (ax.size() != ay.size()) {
          return Fail(false, nullptr, nullptr,
                      absl::StrCat(ax.size(), " vs ", ay.size(), " attributes"));
        }
        for (size_t i = 0; i < ax.size(); ++i) {
          if (ax[i].first != ay[i].first) {
            return Fail(false, nullptr, nullptr,
                        absl::StrCat("attribute \"", ax[i].first, "\" vs \"", ay[i].first, "\""));
          }
          path_.push_back({ax[i].first.c_str(), -1});
          bool ok = Equal(ax[i].second.get(), ay[i].second.get());
          path_.pop_back();
          if (!ok) return false;
        }
        return true;
      }
    }
    return false;
  }

  // Records the first mismatch (with its path) when `ok` is false; returns `ok`.
  bool Fail(bool ok, const Object* a, const Object* b, const std::string& detail = "") {
    if (ok || !mismatch_.empty()) return ok;
    std::string path;
    for (const Step& step : path_) {
      if (!path.empty()) path += ".";
      path += step.name;
      if (step.index >= 0) absl::StrAppend(&path, "[", step.index, "]");
    }
    if (path.empty()) path = "<root>";
    std::string what = detail;
    if (what.empty()) {
      what = absl::StrCat(a ? NodeKindName(a->kind()) : "null", " vs ",
                          b ? NodeKindName(b->kind()) : "null");
    }
    mismatch_ = absl::StrCat(path, ": ", what);
    return false;
  }

  const bool vars_by_identity_;
  absl::flat_hash_map<const Object*, const Object*> a_to_b_;
  absl::flat_hash_map<const Object*, const Object*> b_to_a_;
  absl::flat_hash_set<std::pair<const Object*, const Object*>> equal_pairs_;
  std::vector<Step> path_;
  std::string mismatch_;
};

// A 64-bit mixer (the finalizer of SplitMix64): fixed, documented, platform independent.
uint64_t Mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// FNV-1a over bytes.
uint64_t HashBytes(const char* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t HashString(const std::string& s) { return HashBytes(s.data(), s.size()); }

// Kinds are hashed by name, so reordering the NodeKind enum does not change hashes.
uint64_t KindHash(NodeKind kind) {
  static const std::vector<uint64_t>* table = [] {
    auto* t = new std::vector<uint64_t>();
    for (int k = 0; k < static_cast<int>(NodeKind::kNumKinds); ++k) {
      const char* name = NodeKindName(static_cast<NodeKind>(k));
      t->push_back(HashBytes(name, std::strlen(name)));
    }
    return t;
  }();
  return (*table)[static_cast<size_t>(kind)];
}

class Hasher {
 public:
  explicit Hasher(bool ignore_constants = false) : ignore_constants_(ignore_constants) {}

  uint64_t Hash(const Object* node) {
    if (node == nullptr) return 0x6e756c6cULL;  // "null"
    uint64_t h = KindHash(node->kind());
    if (ignore_constants_ && node->kind() == NodeKind::kIntImm) {
      // Its type only (the first field): every value of it hashes alike.
      return Mix(h, HashField(FieldsOf(*node).front()));
    }
    if (IsMappedKind(node->kind())) {
      auto it = var_index_.find(node);
      if (it != var_index_.end()) return Mix(h, Mix(0x75736500, it->second));  // a use
      var_index_[node] = static_cast<uint64_t>(var_index_.size());
      h = Mix(h, 0x646566);  // a definition: its fields follow
      for (const Field& f : FieldsOf(*node)) h = Mix(h, HashField(f));
      return h;
    }
    // A shared node hashes as a tree walk would, but once: its hash is kept when the walk
    // defined no variable (a later visit of it would see only uses, and so the same hash).
    bool may_repeat = node->HasSeveralOwners();
    if (may_repeat) {
      auto it = shared_hash_.find(node);
      if (it != shared_hash_.end()) return it->second;
    }
    size_t vars_before = var_index_.size();
    for (const Field& f : FieldsOf(*node)) h = Mix(h, HashField(f));
    if (may_repeat && var_index_.size() == vars_before) shared_hash_[node] = h;
    return h;
  }

 private:
  uint64_t HashField(const Field& f) {
    uint64_t h = static_cast<uint64_t>(f.type) + 1;
    switch (f.type) {
      case FieldType::kObject:
        return Mix(h, Hash(f.object));
      case FieldType::kObjectList:
        h = Mix(h, f.objects.size());
        for (const Object* o : f.objects) h = Mix(h, Hash(o));
        return h;
      case FieldType::kInt:
      case FieldType::kBool:
        return Mix(h, static_cast<uint64_t>(f.int_value));
      case FieldType::kDouble:
        return Mix(h, DoubleBits(f.double_value));
      case FieldType::kString:
        return Mix(h, HashString(*f.string_value));
      case FieldType::kDataType:
        return Mix(h, (static_cast<uint64_t>(f.dtype.code()) << 32) |
                          (static_cast<uint64_t>(f.dtype.bits()) << 16) | f.dtype.lanes());
      case FieldType::kAttrs:
        h = Mix(h, f.attrs->size());
        for (const auto& [key, value] : *f.attrs) {
          h = Mix(Mix(h, HashString(key)), Hash(value.get()));
        }
        return h;
    }
    return h;
  }

  const bool ignore_constants_;
  absl::flat_hash_map<const Object*, uint64_t> var_index_;
  absl::flat_hash_map<const Object*, uint64_t> shared_hash_;
};

}  // namespace

bool StructuralEqual(const ObjectRef& a, const ObjectRef& b) {
  return EqualChecker().Equal(a.get(), b.get());
}

absl::Status CheckStructuralEqual(const ObjectRef& a, const ObjectRef& b) {
  EqualChecker checker;
  if (checker.Equal(a.get(), b.get())) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("structural mismatch at ", checker.mismatch()));
}

bool ExprDeepEqual(const ObjectRef& a, const ObjectRef& b) {
  return a == b || EqualChecker(/*vars_by_identity=*/true).Equal(a.get(), b.get());
}

uint64_t StructuralHash(const ObjectRef& node) {
  return Mix(kStructuralHashVersion, Hasher().Hash(node.get()));
}

uint64_t StructuralHashIgnoringConstants(const ObjectRef& node) {
  return Mix(kStructuralHashVersion, Hasher(/*ignore_constants=*/true).Hash(node.get()));
}

}  // namespace kiln::ir
