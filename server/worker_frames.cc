#include "server/worker_frames.h"

#include <cstdint>

namespace kiln::server {
namespace {

void PutLength(uint32_t n, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

uint32_t GetLength(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

}  // namespace

std::string Frame(const google::protobuf::MessageLite& message) {
  std::string out;
  std::string payload = message.SerializeAsString();
  PutLength(static_cast<uint32_t>(payload.size()), &out);
  out += payload;
  return out;
}

bool TakeFrame(std::string* buffer, std::string* payload, bool* oversized) {
  *oversized = false;
  if (buffer->size() < 4) return false;
  uint32_t n = GetLength(reinterpret_cast<const unsigned char*>(buffer->data()));
  if (n > kMaxWorkerFrameBytes) {
    *oversized = true;
    return false;
  }
  if (buffer->size() < 4 + size_t{n}) return false;
  payload->assign(*buffer, 4, n);
  buffer->erase(0, 4 + size_t{n});
  return true;
}

std::optional<std::string> ReadFrame(std::FILE* in) {
  unsigned char header[4];
  if (std::fread(header, 1, 4, in) != 4) return std::nullopt;
  uint32_t n = GetLength(header);
  if (n > kMaxWorkerFrameBytes) return std::nullopt;
  std::string payload(n, '\0');
  if (n > 0 && std::fread(payload.data(), 1, n, in) != n) return std::nullopt;
  return payload;
}

bool WriteFrame(std::FILE* out, const google::protobuf::MessageLite& message) {
  std::string frame = Frame(message);
  return std::fwrite(frame.data(), 1, frame.size(), out) == frame.size() && std::fflush(out) == 0;
}

namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 where none starts there (a stray
// continuation byte, a sequence cut short, an overlong form, a surrogate, past U+10FFFF).
size_t SequenceAt(absl::string_view text, size_t i) {
  const auto byte = static_cast<unsigned char>(text[i]);
  size_t length = byte < 0x80                   ? 1
                  : byte >= 0xc2 && byte < 0xe0 ? 2
                  : byte >= 0xe0 && byte < 0xf0 ? 3
                  : byte >= 0xf0 && byte < 0xf5 ? 4
                                                : 0;
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) {
      return 0;
    }
  }
  if (length == 3) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if ((byte == 0xe0 && next < 0xa0) || (byte == 0xed && next >= 0xa0)) return 0;
  } else if (length == 4) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if ((byte == 0xf0 && next < 0x90) || (byte == 0xf4 && next >= 0x90)) return 0;
  }
  return length;
}

}  // namespace

std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = SequenceAt(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  return out;
}

size_t FirstNotUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = SequenceAt(text, i);
    if (length == 0) return i;
    i += length;
  }
  return absl::string_view::npos;
}

}  // namespace kiln::server
