// What the command lines share (common.hpp); Boost.Program_options' errors are mapped to exit code 2 here.
#include "sim/cli/common.hpp"

#include "sim/engine/replay.hpp"
#include "skeletons/error.hpp"
#include "skeletons/trace/trace.hpp"

#include <boost/program_options.hpp>

#include <cstdlib>
#include <filesystem>

#ifndef MKSIM_DATA_DIR
#define MKSIM_DATA_DIR "."
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace mksim::sim {

std::string resolve_data(const std::string& name, const char* folder) {
  if (name.empty() || fs::exists(name)) return name;
  for (const std::string& candidate : {std::string(MKSIM_DATA_DIR) + "/" + folder + "/" + name,
                                       std::string(MKSIM_DATA_DIR) + "/" + folder + "/" + name + ".xml",
                                       std::string(MKSIM_DATA_DIR) + "/" + folder + "/" + name + ".json"})
    if (fs::exists(candidate)) return candidate;
  return name;  // let the loader report it, with the name the user gave
}

std::map<std::string, double> parse_params(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const auto& item : items) {
    // --param N=4096 and --param N=4096,K=8 are both accepted.
    std::size_t start = 0;
    while (start <= item.size()) {
      std::size_t comma = item.find(',', start);
      std::string kv = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      std::size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--param expects NAME=VALUE, got \"" + kv + "\"");
      std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') throw UsageError("--param " + name + ": \"" + value + "\" is not a number");
      if (name == "P") throw UsageError("give the number of ranks with --P, not --param P=");
      out[name] = v;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

int run_guarded(const std::string& prog, const std::string& usage, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const po::error& e) {
    err << prog << ": " << e.what() << "\n" << usage;
    return EXIT_USAGE;
  } catch (const UsageError& e) {
    err << prog << ": " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const skeletons::SkeletonError& e) {
    err << prog << ": " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const trace::TraceError& e) {
    err << prog << ": " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const DeadlockError& e) {
    err << prog << ": " << e.what() << "\n";
    return EXIT_DEADLOCK;
  } catch (const std::exception& e) {
    err << prog << ": " << e.what() << "\n";
    return EXIT_FAILED;
  }
}

}  // namespace mksim::sim
