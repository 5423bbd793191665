// mksim's subcommands: predict (default), check, platform. Parses options with Boost.Program_options
// (the only place that includes it) and maps every error to a message and an exit code.
#include "sim/cli.hpp"

#include "platforms/generator.hpp"
#include "results/hdf5_io.hpp"
#include "results/summary.hpp"
#include "sim/replay.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#ifndef MKSIM_DATA_DIR
#define MKSIM_DATA_DIR "."
#endif
#ifndef MKSIM_VERSION
#define MKSIM_VERSION "0.0.0"
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace mksim::sim {

namespace {

/** @brief A user error (bad option or input): exit code 2. */
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief A bundled file (platform or skeleton) when `name` is not a path that exists. */
std::string resolve_data(const std::string& name, const char* folder) {
  if (name.empty() || fs::exists(name)) return name;
  for (const std::string& candidate : {std::string(MKSIM_DATA_DIR) + "/" + folder + "/" + name,
                                       std::string(MKSIM_DATA_DIR) + "/" + folder + "/" + name + ".xml"})
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

const char* USAGE =
    "usage: mksim [predict] --platform FILE --P N [--skeleton FILE] [--param NAME=VALUE ...] [-o OUT.h5]\n"
    "                       [--timeline OUT.csv] [--seed S] [--cfg simgrid/key:value ...]\n"
    "       mksim check --skeleton FILE [--P N] [--param NAME=VALUE ...]\n"
    "       mksim platform --machine {ipsc860,paragon,t3e,fattree} --nodes N -o OUT.xml\n"
    "       mksim --version | --help\n";

/** @brief Parses args into desc's variables; prints help and returns false when --help was given. */
bool parse_options(const std::vector<std::string>& args, const po::options_description& desc, std::ostream& out,
                   const char* usage = "") {
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    out << usage << desc;
    return false;
  }
  po::notify(vm);
  return true;
}

int cmd_predict(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mksim predict");
  std::string platform, skeleton, output, timeline;
  int P = 0;
  unsigned long long seed = 1;
  std::vector<std::string> params, cfg;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "SimGrid platform XML (or a bundled name: paragon, t3e, ipsc860)")
      ("P", po::value(&P)->required(), "number of MPI ranks to simulate")
      ("skeleton", po::value(&skeleton)->default_value(std::string(MKSIM_DATA_DIR) + "/skeletons/examples/atm2d.json"), "skeleton JSON")
      ("param", po::value(&params)->composing(), "parameter value NAME=VALUE (repeatable, or comma-separated)")
      ("output,o", po::value(&output), "write results to this HDF5 file (atomically)")
      ("timeline", po::value(&timeline), "write a per-rank event timeline (CSV) for small runs")
      ("seed", po::value(&seed)->default_value(1), "seed of the per-rank random generators")
      ("cfg", po::value(&cfg)->composing(), "extra SimGrid setting key:value (recorded with the result)");
  if (!parse_options(args, desc, out, USAGE)) return EXIT_OK;

  ReplayOptions opt;
  opt.platform_path = resolve_data(platform, "platforms");
  opt.P = P;
  opt.params = parse_params(params);
  opt.seed = seed;
  opt.timeline_csv = timeline;
  opt.simgrid_config = cfg;
  opt.warnings = &err;
  if (!opt.platform_path.empty() && !fs::exists(opt.platform_path))
    throw UsageError(platform + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  if (!output.empty()) {
    fs::path dir = fs::path(output).parent_path();
    if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");
  }
  skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(skeleton, "skeletons/examples"));
  results::RunResult res = replay(sk, opt);
  if (!output.empty()) results::write_run_hdf5(output, res);
  out << results::summarize(res);
  if (!output.empty()) out << "results: " << output << "\n";
  if (!timeline.empty()) out << "timeline: " << timeline << "\n";
  return EXIT_OK;
}

int cmd_check(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim check");
  std::string skeleton;
  int P = 0;
  std::vector<std::string> params;
  desc.add_options()("help,h", "this help")("skeleton", po::value(&skeleton)->required(), "skeleton JSON")
      ("P", po::value(&P), "also check every rank's program at this P")
      ("param", po::value(&params)->composing(), "parameter value NAME=VALUE");
  if (!parse_options(args, desc, out)) return EXIT_OK;
  skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(skeleton, "skeletons/examples"));
  out << sk.file << ": skeleton \"" << sk.name << "\" is valid: " << sk.params.size() << " parameter(s), "
      << sk.groups.size() << " rank group(s), " << sk.blocks.size() << " block(s), hash " << skeletons::hash_hex(sk.hash)
      << "\n";
  if (P > 0) {
    auto frame = skeletons::bind_parameters(sk, P, parse_params(params));
    skeletons::check_for_run(sk, frame, P);
    out << "every rank has a valid program at P=" << P << "\n";
  }
  return EXIT_OK;
}

int cmd_platform(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim platform");
  std::string machine, output;
  long nodes = 0;
  desc.add_options()("help,h", "this help")("machine", po::value(&machine)->required(), "ipsc860, paragon, t3e or fattree")
      ("nodes", po::value(&nodes)->required(), "number of compute nodes")
      ("output,o", po::value(&output)->required(), "platform XML to write");
  if (!parse_options(args, desc, out)) return EXIT_OK;
  platforms::PlatformSpec spec;
  try {
    spec = platforms::preset_for(machine, nodes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::string xml = platforms::generate_platform_xml(spec);
  std::string tmp = output + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << xml;
    if (!f) throw std::runtime_error(output + ": cannot write");
  }
  fs::rename(tmp, output);
  std::string dims;
  for (long d : spec.dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  out << "wrote " << output << ": " << machine << " " << dims << " (" << nodes << " nodes)\n";
  return EXIT_OK;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty()) {
      err << USAGE;
      return EXIT_USAGE;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      out << USAGE;
      return EXIT_OK;
    }
    if (args[0] == "--version") {
      out << "mksim " << MKSIM_VERSION << "\n";
      return EXIT_OK;
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "predict") return cmd_predict(rest, out, err);
    if (args[0] == "check") return cmd_check(rest, out);
    if (args[0] == "platform") return cmd_platform(rest, out);
    if (!args[0].empty() && args[0][0] != '-') throw UsageError("unknown command \"" + args[0] + "\"");
    return cmd_predict(args, out, err);
  } catch (const po::error& e) {
    err << "mksim: " << e.what() << "\n" << USAGE;
    return EXIT_USAGE;
  } catch (const UsageError& e) {
    err << "mksim: " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const skeletons::SkeletonError& e) {
    err << "mksim: " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const DeadlockError& e) {
    err << "mksim: " << e.what() << "\n";
    return EXIT_DEADLOCK;
  } catch (const std::exception& e) {
    err << "mksim: " << e.what() << "\n";
    return EXIT_FAILED;
  }
}

}  // namespace mksim::sim
