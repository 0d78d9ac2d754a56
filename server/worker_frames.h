// Frames of the kilnd <-> kiln-worker conversation (worker.proto): a 4-byte little-endian
// length, then that many bytes of a serialized message.
#ifndef KILN_SERVER_WORKER_FRAMES_H_
#define KILN_SERVER_WORKER_FRAMES_H_

#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"

namespace kiln::server {

// The largest frame either side accepts (a module or an artifact, with room to spare).
constexpr size_t kMaxWorkerFrameBytes = size_t{1} << 31;

// `message` as a frame.
std::string Frame(const google::protobuf::MessageLite& message);

// Takes the first complete frame off the front of `buffer` into `payload`; false when the buffer
// does not hold one yet. Sets `*oversized` for a length over the limit (the stream is broken).
bool TakeFrame(std::string* buffer, std::string* payload, bool* oversized);

// Blocking read of one frame from `in` (the worker's stdin); nullopt at end of input or on a
// broken frame.
std::optional<std::string> ReadFrame(std::FILE* in);

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD: what a
// diagnostic quoting a client's bytes becomes before it goes into a message's string field (a
// proto3 string that is not UTF-8 does not parse, and the diagnostic would be lost).
std::string ValidUtf8(absl::string_view text);

// Where `text` stops being UTF-8: the offset of the first byte that is not part of a valid
// sequence, or npos when it is UTF-8 throughout. Nothing is copied.
size_t FirstNotUtf8(absl::string_view text);

// Writes `message` as one frame to `out` and flushes; false when the write failed.
bool WriteFrame(std::FILE* out, const google::protobuf::MessageLite& message);

}  // namespace kiln::server

#endif  // KILN_SERVER_WORKER_FRAMES_H_
