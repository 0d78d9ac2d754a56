// `kiln run ... --expect NAME=REF.npy`: the outputs a run wrote, compared with references.
#ifndef KILN_CLIENT_OUTPUT_CHECK_H_
#define KILN_CLIENT_OUTPUT_CHECK_H_

#include <string>
#include <vector>

namespace kiln::client {

// For each "NAME=REF.npy" in `expects`, compares DIR/NAME.npy with REF.npy: same dtype and shape,
// and every element within `tolerance` * (1 + |reference|). Prints one line per output with the
// largest error and the tolerance; returns 0 when all match, 1 (with the reason on stderr)
// otherwise.
int CheckOutputs(const std::string& output_dir, const std::vector<std::string>& expects,
                 double tolerance);

}  // namespace kiln::client

#endif  // KILN_CLIENT_OUTPUT_CHECK_H_
