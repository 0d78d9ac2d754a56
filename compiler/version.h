// The compiler's identity: the release version plus a digest of the compiler's own sources,
// taken at build time (//compiler:identity), so that it changes whenever the compiler does. It is
// part of every artifact cache key, request fingerprint and manifest (and, with the tuner, of
// every tuning record): after an upgrade, nothing built by another compiler is served as a hit.
#ifndef KILN_COMPILER_VERSION_H_
#define KILN_COMPILER_VERSION_H_

namespace kiln {

// The release version, bumped by hand.
inline constexpr char kCompilerVersion[] = "0.1.0";

// kCompilerVersion + "+" + the first 12 hex digits of the SHA-256 of the compiler's sources, e.g.
// "0.1.0+3f9c2a1b7d4e".
const char* CompilerIdentity();

}  // namespace kiln

#endif  // KILN_COMPILER_VERSION_H_
