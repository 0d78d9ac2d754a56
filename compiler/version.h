// The compiler's identity. kCompilerVersion is part of every artifact cache key and tuning
// record: bump it whenever generated code for the same input can change.
#ifndef KILN_COMPILER_VERSION_H_
#define KILN_COMPILER_VERSION_H_

namespace kiln {

inline constexpr char kCompilerVersion[] = "0.1.0";

}  // namespace kiln

#endif  // KILN_COMPILER_VERSION_H_
