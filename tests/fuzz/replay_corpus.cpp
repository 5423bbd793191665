// Corpus replay: runs every fuzz entry point over every file of its corpus directory (corpus/<target>/),
// so seeds and past crash inputs are checked on every ctest run, with any compiler and without libFuzzer.
//   fuzz_replay CORPUS_DIR                 every target over CORPUS_DIR/<target>/*
//   fuzz_replay --target NAME FILE...      one target over the given files (to reproduce a crash)
#include "tests/fuzz/targets.hpp"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Runs one input; an exception that got past the target (not the reader's own type) is a failure.
bool replay(const mksim::fuzz::Target& target, const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << file.string() << ": cannot open\n";
    return false;
  }
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::cout << target.name << ": " << file.filename().string() << " (" << bytes.size() << " bytes): " << std::flush;
  try {
    target.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    std::cout << mksim::fuzz::last_outcome() << std::endl;
    return true;
  } catch (const std::exception& e) {
    std::cerr << file.string() << ": " << target.name << " let through an exception: " << e.what() << '\n';
  } catch (...) {
    std::cerr << file.string() << ": " << target.name << " let through a non-standard exception\n";
  }
  return false;
}

int replay_corpus(const fs::path& corpus) {
  int failed = 0, inputs = 0;
  for (const auto& target : mksim::fuzz::targets()) {
    const fs::path dir = corpus / std::string(target.name);
    if (!fs::is_directory(dir)) {
      std::cerr << dir.string() << ": no corpus for target " << target.name << '\n';
      ++failed;
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      ++inputs;
      failed += !replay(target, f);
    }
  }
  std::cout << "replayed " << inputs << " inputs of " << mksim::fuzz::targets().size() << " targets, " << failed
            << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0][0] != '-') return replay_corpus(args[0]);
  if (args.size() >= 3 && args[0] == "--target") {
    const auto* target = mksim::fuzz::find_target(args[1]);
    if (!target) {
      std::cerr << "fuzz_replay: no target named " << args[1] << '\n';
      return 2;
    }
    bool ok = true;
    for (std::size_t i = 2; i < args.size(); ++i) ok = replay(*target, args[i]) && ok;
    return ok ? 0 : 1;
  }
  std::cerr << "usage: fuzz_replay CORPUS_DIR | fuzz_replay --target NAME FILE...\n";
  return 2;
}
