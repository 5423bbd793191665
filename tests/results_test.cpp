// Unit tests of results/: HDF5 round trip, determinism, atomic writes, error messages, and the text summary.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "results/hdf5_io.hpp"
#include "results/run_result.hpp"
#include "results/summary.hpp"

namespace fs = std::filesystem;
using namespace mksim::results;

namespace {

// A fresh directory per test, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("mksim_results_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a std::runtime_error";
  return "";
}

RunResult populated() {
  RunResult r;
  r.attributes = {{"P", "4"},
                  {"note", "naïve ünïcödé — 日本語 ✓"},
                  {"param.N", "1024"},
                  {"platform", "dragonfly-1k.xml"},
                  {"simgrid.network/model", "SMPI"},
                  {"ünicode-key", ""}};
  r.predicted_time_s = 1.2345678901234567;
  r.critical_rank = 2;
  r.total_messages = std::numeric_limits<std::uint64_t>::max();
  r.ranks = {{1.0, 0.5, 0.25, 0.25, 3, 3072},
             {1.1, 0.6, 0.3, 0.2, 4, 4096},
             {1.2345678901234567, 0.1, 1e-300, 5e-324, 0, 0},
             {0.9, 1e300, 0.0, 0.0, 1, std::numeric_limits<std::uint64_t>::max()}};
  r.blocks = {{"/blocks/0", "compute", "", 4, 2.0, 0.0},
              {"halo-é", "send", "solve", 400, 0.75, 1.5e9},
              {"/blocks/2", "allreduce", "solve ✓", 4, 0.125, 32.0}};
  r.phases = {{"", 1.0, 0.0, 0.5, 0.4, 2.0}, {"solve", 0.5, 0.75, 0.1, 0.3, 1.5}, {"solve ✓", 0.0, 0.125, 0.0, 0.125, 0.25}};
  return r;
}

void expect_equal(const RunResult& a, const RunResult& b) {
  EXPECT_EQ(a.attributes, b.attributes);
  EXPECT_EQ(a.predicted_time_s, b.predicted_time_s);
  EXPECT_EQ(a.critical_rank, b.critical_rank);
  EXPECT_EQ(a.total_messages, b.total_messages);
  const auto rank = [](const RankTimes& x) {
    return std::tie(x.finish_s, x.compute_s, x.comm_s, x.wait_s, x.messages_sent, x.bytes_sent);
  };
  const auto block = [](const BlockTotals& x) { return std::tie(x.id, x.op, x.phase, x.executions, x.time_s, x.bytes); };
  const auto phase = [](const PhaseTotals& x) { return std::tie(x.phase, x.compute_s, x.comm_s, x.wait_s, x.critical_rank_s, x.end_s); };
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (std::size_t i = 0; i < a.ranks.size(); ++i) EXPECT_TRUE(rank(a.ranks[i]) == rank(b.ranks[i])) << "rank " << i;
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (std::size_t i = 0; i < a.blocks.size(); ++i)
    EXPECT_TRUE(block(a.blocks[i]) == block(b.blocks[i])) << "block " << i;
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (std::size_t i = 0; i < a.phases.size(); ++i)
    EXPECT_TRUE(phase(a.phases[i]) == phase(b.phases[i])) << "phase " << i;
}

}  // namespace

TEST(Results, RoundTripOfPopulatedResult) {
  const ScratchDir dir;
  const RunResult written = populated();
  write_run_hdf5(dir.file("run.h5"), written);
  expect_equal(read_run_hdf5(dir.file("run.h5")), written);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"run.h5"});
}

TEST(Results, RoundTripOfEmptyTables) {
  const ScratchDir dir;
  RunResult written;
  written.predicted_time_s = 0.5;
  write_run_hdf5(dir.file("empty.h5"), written);
  const RunResult read = read_run_hdf5(dir.file("empty.h5"));
  expect_equal(read, written);
  EXPECT_TRUE(read.ranks.empty() && read.blocks.empty() && read.phases.empty() && read.attributes.empty());
}

TEST(Results, RewriteIsByteIdentical) {
  const ScratchDir dir;
  const auto before = std::chrono::system_clock::now();
  write_run_hdf5(dir.file("a.h5"), populated());
  const std::string first = bytes_of(dir.file("a.h5"));
  write_run_hdf5(dir.file("a.h5"), populated());  // replaces the existing file
  write_run_hdf5(dir.file("b.h5"), populated());
  const auto after = std::chrono::system_clock::now();
  EXPECT_EQ(bytes_of(dir.file("a.h5")), first);
  EXPECT_EQ(bytes_of(dir.file("b.h5")), first);

  // HDF5 stores object times as 32-bit little-endian seconds; none of the seconds of this test may appear.
  const auto seconds = [](auto t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  for (std::size_t i = 0; i + 4 <= first.size(); ++i) {
    std::uint32_t value = 0;
    for (int b = 3; b >= 0; --b) value = (value << 8) | static_cast<unsigned char>(first[i + b]);
    ASSERT_FALSE(value >= seconds(before) - 1 && value <= seconds(after) + 1) << "timestamp at byte " << i;
  }
}

TEST(Results, WriteIntoMissingDirectoryThrowsAndLeavesNothing) {
  const ScratchDir dir;
  const std::string path = dir.file("missing/run.h5");
  const std::string error = error_of([&] { write_run_hdf5(path, populated()); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Results, FailedRenameLeavesNoTemporaryFile) {
  const ScratchDir dir;
  const std::string path = dir.file("taken");
  fs::create_directories(fs::path(path) / "inside");  // a non-empty directory cannot be replaced by a file
  const std::string error = error_of([&] { write_run_hdf5(path, populated()); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("rename"), std::string::npos) << error;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"taken"});
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(Results, FailureMidWriteKeepsOldFileAndRemovesTemporary) {
  const ScratchDir dir;
  const std::string path = dir.file("run.h5");
  write_run_hdf5(path, populated());
  const std::string old_bytes = bytes_of(path);

  RunResult bad = populated();
  bad.attributes.emplace_back(std::string(100000, 'k'), "too long a name for an object header");  // HDF5 refuses it
  const std::string error = error_of([&] { write_run_hdf5(path, bad); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("create attribute"), std::string::npos) << error;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"run.h5"});
  EXPECT_EQ(bytes_of(path), old_bytes);
}

TEST(Results, ReservedOrRepeatedAttributeKeysAreRejected) {
  const ScratchDir dir;
  RunResult reserved = populated();
  reserved.attributes.emplace_back("format_version", "2");
  EXPECT_NE(error_of([&] { write_run_hdf5(dir.file("a.h5"), reserved); }).find("format_version"), std::string::npos);
  RunResult repeated = populated();
  repeated.attributes.emplace_back("P", "8");
  EXPECT_NE(error_of([&] { write_run_hdf5(dir.file("a.h5"), repeated); }).find("twice"), std::string::npos);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Results, TruncatedFileErrorNamesThePath) {
  const ScratchDir dir;
  const std::string path = dir.file("run.h5");
  write_run_hdf5(path, populated());
  fs::resize_file(path, fs::file_size(path) / 2);
  const std::string error = error_of([&] { read_run_hdf5(path); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

TEST(Results, NonHdf5FileErrorNamesThePath) {
  const ScratchDir dir;
  const std::string path = dir.file("run.h5");
  write_bytes(path, "{\"not\": \"hdf5\"}\n");
  const std::string error = error_of([&] { read_run_hdf5(path); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

TEST(Results, MissingFileErrorNamesThePath) {
  const ScratchDir dir;
  const std::string path = dir.file("absent.h5");
  EXPECT_NE(error_of([&] { read_run_hdf5(path); }).find(path), std::string::npos);
}

TEST(Results, MissingDatasetIsNamed) {
  const ScratchDir dir;
  const std::string path = dir.file("run.h5");
  write_run_hdf5(path, populated());
  // Rename the link /ranks/messages_sent by patching its name in place ("T" < "t" keeps any name order intact),
  // so the test needs no HDF5 of its own.
  std::string bytes = bytes_of(path);
  const std::string name = "messages_sent";
  std::size_t patched = 0;
  for (std::size_t at = bytes.find(name); at != std::string::npos; at = bytes.find(name, at + 1), ++patched)
    bytes[at + name.size() - 1] = 'T';
  ASSERT_GT(patched, 0u);
  write_bytes(path, bytes);
  const std::string error = error_of([&] { read_run_hdf5(path); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("missing dataset /ranks/messages_sent"), std::string::npos) << error;
}

TEST(Results, SummaryIsFixedText) {
  RunResult r;
  r.predicted_time_s = 2.5;
  r.critical_rank = 1;
  r.total_messages = 12;
  r.ranks = {{2.0, 1.5, 0.25, 0.25, 6, 600}, {2.5, 1.5, 0.5, 0.5, 6, 600}};
  r.phases = {{"solve", 2.0, 0.5, 0.25}, {"", 1.0, 0.25, 0.5}, {"io", 0, 0, 0}};
  EXPECT_EQ(summarize(r),
            "predicted time    2.5 s\n"
            "critical rank     1 of 2 ranks\n"
            "messages          12\n"
            "time over ranks   total_s       share\n"
            "  compute         3             66.7%\n"
            "  communication   0.75          16.7%\n"
            "  wait            0.75          16.7%\n"
            "phase             compute_s     comm_s        wait_s\n"
            "  (none)          1             0.25          0.5\n"
            "  io              0             0             0\n"
            "  solve           2             0.5           0.25\n");
}

TEST(Results, SummaryOfManyPhasesStaysShort) {
  RunResult r;
  r.ranks = {{2.0, 1.0, 0.5, 0.5, 1, 8}};
  r.predicted_time_s = 2.0;
  for (int i = 29; i >= 0; --i) r.phases.push_back({"p" + std::to_string(100 + i), 1.0 / 3, 0, 0});
  const std::string text = summarize(r);
  EXPECT_LE(std::count(text.begin(), text.end(), '\n'), 20);
  EXPECT_NE(text.find("  compute         1             50.0%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  p100            0.333333"), std::string::npos) << text;  // sorted by phase
  EXPECT_NE(text.find("19 more phases"), std::string::npos) << text;
}
