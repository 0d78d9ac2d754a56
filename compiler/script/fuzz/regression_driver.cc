// Runs a fuzz target (the TVMScript parser's, the ONNX importer's, the IR proto decoder's)
// without libFuzzer (any compiler): every seed in the corpus, then a fixed number of
// deterministic mutations of them (byte flips, insertions of TVMScript tokens, deletions,
// splices, and one in eight by the target's own structure-aware mutator where it has one). It is
// the CI-sized cousin of tools/fuzz.sh.
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// A target's structure-aware mutator, where it has one (weak: null otherwise).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) __attribute__((weak));

// libFuzzer's own mutation, which custom mutators fall back to: here, one random byte.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  static std::mt19937 rng(7);
  if (size == 0 || max_size == 0) return 0;
  data[rng() % size] = static_cast<uint8_t>(rng());
  return size;
}

namespace {

int Run(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::vector<std::string> ReadCorpus(const std::string& dir) {
  std::vector<std::string> names, out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(text.str());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "compiler/script/testdata";
  int iterations = argc > 2 ? std::atoi(argv[2]) : 20000;
  std::vector<std::string> corpus = ReadCorpus(dir);
  if (corpus.empty()) {
    std::fprintf(stderr, "no seeds in %s\n", dir.c_str());
    return 1;
  }
  for (const std::string& seed : corpus) Run(seed);
  static const char* kTokens[] = {"(",
                                  ")",
                                  "[",
                                  "]",
                                  ":",
                                  ",",
                                  "\n",
                                  "    ",
                                  "=",
                                  "T.",
                                  "R.",
                                  "\"",
                                  "'",
                                  "#",
                                  "@",
                                  "0",
                                  "-1",
                                  "1e9",
                                  "n",
                                  "T.int64(",
                                  "R.Tensor((",
                                  "with ",
                                  "for ",
                                  "if ",
                                  "else:\n",
                                  "return ",
                                  "\\",
                                  "\t",
                                  "9999999999999999999999",
                                  "T.grid(",
                                  "lambda"};
  std::mt19937_64 rng(20261122);
  for (int i = 0; i < iterations; ++i) {
    std::string s = corpus[rng() % corpus.size()];
    if (LLVMFuzzerCustomMutator != nullptr && rng() % 8 == 0) {
      size_t size = s.size();
      size_t max_size = size * 4 + (1 << 20);
      s.resize(max_size);
      size = LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(s.data()), size, max_size,
                                     static_cast<unsigned int>(rng()));
      s.resize(size);
      Run(s);
      continue;
    }
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      switch (rng() % 5) {
        case 0:
          s[at] = static_cast<char>(rng());
          break;
        case 1:
          s.insert(at, kTokens[rng() % (sizeof(kTokens) / sizeof(*kTokens))]);
          break;
        case 2:
          s.erase(at, 1 + rng() % 16);
          break;
        case 3: {
          const std::string& other = corpus[rng() % corpus.size()];
          size_t from = rng() % other.size();
          s.insert(at, other.substr(from, rng() % 200));
          break;
        }
        default:
          s.resize(at);
          break;
      }
    }
    Run(s);
  }
  std::printf("ran %zu seeds and %d mutations\n", corpus.size(), iterations);
  return 0;
}
