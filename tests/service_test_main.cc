// main() of the service's end-to-end tests: the binaries under test come as arguments (kilnd,
// kiln-agent, kiln, and optionally the kiln-worker with test hooks).
#include <cstdio>

#include "tests/service_test_util.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s KILND KILN_AGENT KILN\n", argv[0]);
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], argc > 4 ? argv[4] : ""};
  return RUN_ALL_TESTS();
}
