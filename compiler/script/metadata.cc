#include "compiler/script/metadata.h"

#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kiln::script {
namespace {

using nlohmann::json;

constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13F;

template <typename T>
bool Read(absl::string_view bytes, size_t* at, T* out) {
  if (bytes.size() - *at < sizeof(T) || *at > bytes.size()) return false;
  std::memcpy(out, bytes.data() + *at, sizeof(T));  // little-endian host, as TVM writes
  *at += sizeof(T);
  return true;
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("metadata: ", what));
}

// The node at `index` in `nodes`, if it is an object.
const json* Node(const json& nodes, const json& index) {
  if (!index.is_number_unsigned() && !index.is_number_integer()) return nullptr;
  int64_t i = index.get<int64_t>();
  if (i < 0 || i >= static_cast<int64_t>(nodes.size()) || !nodes[i].is_object()) return nullptr;
  return &nodes[i];
}

std::string TypeKey(const json& node) {
  auto it = node.find("type_key");
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

absl::StatusOr<ir::relax::Expr> DecodeTvmNDArray(absl::string_view bytes) {
  size_t at = 0;
  uint64_t magic = 0, reserved = 0;
  int32_t device_type = 0, device_id = 0, ndim = 0;
  uint8_t code = 0, bits = 0;
  uint16_t lanes = 0;
  if (!Read(bytes, &at, &magic) || magic != kNDArrayMagic)
    return Bad("an NDArray without TVM's magic number");
  if (!Read(bytes, &at, &reserved) || !Read(bytes, &at, &device_type) ||
      !Read(bytes, &at, &device_id) || !Read(bytes, &at, &ndim) || !Read(bytes, &at, &code) ||
      !Read(bytes, &at, &bits) || !Read(bytes, &at, &lanes)) {
    return Bad("a truncated NDArray header");
  }
  if (ndim < 0 || ndim > 64) return Bad(absl::StrCat("an NDArray with ", ndim, " dimensions"));
  if (code > 4 || code == 3 || lanes != 1 || bits == 0) {
    return Bad(absl::StrCat("an NDArray of unsupported dtype (code ", code, ", bits ", bits,
                            ", lanes ", lanes, ")"));
  }
  ir::DataType dtype(static_cast<ir::DataType::Code>(code), bits, lanes);
  std::vector<int64_t> shape(ndim);
  uint64_t count = 1;
  for (int32_t i = 0; i < ndim; ++i) {
    if (!Read(bytes, &at, &shape[i]) || shape[i] < 0) return Bad("a malformed NDArray shape");
    if (shape[i] > 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(shape[i]))
      return Bad("an NDArray that is too large");
    count *= static_cast<uint64_t>(shape[i]);
  }
  int64_t size = 0;
  if (!Read(bytes, &at, &size) || size < 0) return Bad("a malformed NDArray data size");
  if (static_cast<uint64_t>(size) != count * dtype.bytes()) {
    return Bad(absl::StrCat("an NDArray of ", count, " ", dtype.ToString(), " elements with ", size,
                            " data bytes"));
  }
  if (bytes.size() - at != static_cast<uint64_t>(size))
    return Bad("NDArray data of the wrong length");
  return ir::relax::MakeConstant(dtype, std::move(shape), std::string(bytes.substr(at)));
}

std::string EncodeTvmNDArray(const ir::relax::ConstantNode& constant) {
  std::string out;
  auto put = [&](const auto& value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(value));
  };
  put(kNDArrayMagic);
  put(uint64_t{0});
  put(int32_t{1});  // kDLCPU
  put(int32_t{0});
  put(static_cast<int32_t>(constant.shape.size()));
  put(static_cast<uint8_t>(constant.dtype.code()));
  put(static_cast<uint8_t>(constant.dtype.bits()));
  put(static_cast<uint16_t>(constant.dtype.lanes()));
  for (int64_t d : constant.shape) put(d);
  const std::string& data = constant.bytes ? *constant.bytes : std::string();
  put(static_cast<int64_t>(data.size()));
  out += data;
  return out;
}

std::string PrintTvmMetadata(const std::vector<const ir::relax::ConstantNode*>& constants) {
  json nodes = json::array();
  nodes.push_back({{"type_key", ""}});
  nodes.push_back({{"type_key", "Map"}, {"keys", {"relax.expr.Constant"}}, {"data", {2}}});
  json items = json::array();
  json arrays = json::array();
  for (size_t i = 0; i < constants.size(); ++i) items.push_back(3 + i);
  nodes.push_back({{"type_key", "Array"}, {"data", items}});
  for (size_t i = 0; i < constants.size(); ++i) {
    nodes.push_back(
        {{"type_key", "relax.expr.Constant"}, {"attrs", {{"data", std::to_string(i)}}}});
    arrays.push_back(absl::Base64Escape(EncodeTvmNDArray(*constants[i])));
  }
  json doc = {{"root", 1},
              {"nodes", nodes},
              {"b64ndarrays", arrays},
              {"attrs", {{"tvm_version", "0.20.0"}}}};
  return doc.dump(2);
}

absl::StatusOr<std::vector<ir::relax::Expr>> ParseTvmMetadata(absl::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Bad("not a JSON object");
  auto nodes_it = doc.find("nodes");
  auto root_it = doc.find("root");
  if (nodes_it == doc.end() || !nodes_it->is_array() || root_it == doc.end())
    return Bad("no \"root\" and \"nodes\"");
  const json& nodes = *nodes_it;
  std::vector<std::string> arrays;
  if (auto b64 = doc.find("b64ndarrays"); b64 != doc.end()) {
    if (!b64->is_array()) return Bad("\"b64ndarrays\" is not a list");
    for (const json& item : *b64) {
      if (!item.is_string()) return Bad("a b64ndarrays entry is not a string");
      std::string raw;
      if (!absl::Base64Unescape(item.get<std::string>(), &raw))
        return Bad("a b64ndarrays entry is not base64");
      arrays.push_back(std::move(raw));
    }
  }
  const json* root = Node(nodes, *root_it);
  if (root == nullptr || TypeKey(*root) != "Map") return Bad("the root is not a Map");
  auto keys = root->find("keys");
  auto data = root->find("data");
  if (keys == root->end() || data == root->end() || !keys->is_array() || !data->is_array() ||
      keys->size() != data->size()) {
    return Bad("a malformed root Map");
  }
  std::vector<ir::relax::Expr> constants;
  for (size_t k = 0; k < keys->size(); ++k) {
    if (!(*keys)[k].is_string() || (*keys)[k].get<std::string>() != "relax.expr.Constant") continue;
    const json* array = Node(nodes, (*data)[k]);
    auto items = array != nullptr ? array->find("data") : json::const_iterator();
    if (array == nullptr || TypeKey(*array) != "Array" || items == array->end() ||
        !items->is_array()) {
      return Bad("\"relax.expr.Constant\" is not an Array");
    }
    for (const json& index : *items) {
      const json* constant = Node(nodes, index);
      if (constant == nullptr || TypeKey(*constant) != "relax.expr.Constant")
        return Bad("an entry is not a relax.expr.Constant");
      auto attrs = constant->find("attrs");
      auto ref = attrs != constant->end() && attrs->is_object() ? attrs->find("data")
                                                                : json::const_iterator();
      if (attrs == constant->end() || !attrs->is_object() || ref == attrs->end() ||
          !ref->is_string()) {
        return Bad("a Constant without a data index");
      }
      char* end = nullptr;
      std::string ref_text = ref->get<std::string>();
      long which = std::strtol(ref_text.c_str(), &end, 10);
      if (end == ref_text.c_str() || *end != '\0' || which < 0 ||
          which >= static_cast<long>(arrays.size())) {
        return Bad(
            absl::StrCat("a Constant refers to b64ndarrays[", ref_text, "], which does not exist"));
      }
      absl::StatusOr<ir::relax::Expr> c = DecodeTvmNDArray(arrays[which]);
      if (!c.ok()) return c.status();
      constants.push_back(*c);
    }
  }
  return constants;
}

}  // namespace kiln::script
