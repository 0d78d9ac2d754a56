// Runs a fuzz target (the TVMScript parser's, the ONNX importer's) without libFuzzer (any
// compiler): every seed in the corpus, then a fixed number of deterministic mutations of them
// (byte flips, insertions of TVMScript tokens, deletions, splices). It is the CI-sized cousin
// of tools/fuzz.sh.
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
