// The regression test behind each fuzz target: every seed and every crash
// input found so far (tools/fuzz/corpus/<target>, crashes/<target>) goes
// through the target's LLVMFuzzerTestOneInput under the normal build (and
// under --config=asan). An input that crashes or trips a sanitizer fails
// the test; so does finding no input at all.
//   <target>_replay_test <dir>...
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (!fs::is_directory(argv[i], ec)) continue;  // no crashes found yet
    for (const auto& e : fs::directory_iterator(argv[i])) {
      if (!e.is_regular_file()) continue;
      std::ifstream f(e.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(f)), {});
      std::printf("%s (%zu bytes)\n", e.path().filename().c_str(), bytes.size());
      std::fflush(stdout);  // the last line names the input if it crashes
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  std::printf("%d inputs replayed\n", inputs);
  if (inputs == 0) {
    std::fprintf(stderr, "no inputs found: the corpus directory is missing or empty\n");
    return 1;
  }
  return 0;
}
