// Replays a fuzz target's checked-in corpus as an ordinary test: each input
// of each folder named on the command line once, in name order, with no
// mutation. Linked instead of libFuzzer into the targets of builds without
// it (the plain and sanitizer builds of make check and make test), so every
// compiler checks what the corpora reach; make fuzz mutates them with
// libFuzzer in the clang build (docs/fuzzing.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize != nullptr)
    LLVMFuzzerInitialize(&argc, &argv);
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> files;
    for (auto& e : std::filesystem::directory_iterator(argv[i]))
      if (e.is_regular_file())
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      std::fprintf(stderr, "%s: no inputs in %s\n", argv[0], argv[i]);
      return 1;
    }
    for (auto& f : files) {
      std::ifstream in{f, std::ios::binary};
      std::string bytes{std::istreambuf_iterator<char>{in},
                        std::istreambuf_iterator<char>{}};
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size());
      ++inputs;
    }
  }
  std::printf("replayed %zu inputs\n", inputs);
  return 0;
}
