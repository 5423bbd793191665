// mksim's subcommands: predict (default), check, platform; mkskel's: build, show, inspect. Parses options with Boost.Program_options
// (the only place that includes it) and maps every error to a message and an exit code.
#include "sim/cli.hpp"

#include "platforms/generator.hpp"
#include "results/hdf5_io.hpp"
#include "results/summary.hpp"
#include "sim/replay.hpp"
#include "skeletons/error.hpp"
#include "skeletons/build/builder.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/otf2_reader.hpp"
#include "skeletons/trace/reader.hpp"
#include "skeletons/trace/ti_reader.hpp"

#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

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

const char* MKSKEL_USAGE =
    "usage: mkskel build TRACE... -o OUT.json [--name NAME] [--min-compute-s S] [--strict]\n"
    "         TRACE: a mktrace run directory, an OTF2 anchor file (*.otf2) or a SimGrid TI index file;\n"
    "         append ::NAME=VALUE,... to set or override the run's parameters (required for OTF2/TI)\n"
    "       mkskel show SKELETON.json\n"
    "       mkskel inspect TRACE\n";

/** @brief Reads one traced run given as PATH[::NAME=VALUE,...]. */
trace::Run read_any_run(const std::string& arg) {
  std::string path = arg, extra;
  if (std::size_t sep = arg.find("::"); sep != std::string::npos) {
    path = arg.substr(0, sep);
    extra = arg.substr(sep + 2);
  }
  trace::Run run;
  if (fs::is_directory(path)) {
    run = trace::read_run(path, {.require_complete = true});
  } else if (fs::path(path).extension() == ".otf2") {
    run = trace::read_otf2_run(path);
    run.dir = path;
  } else if (fs::exists(path)) {
    run = trace::read_ti_run(path);
    run.dir = path;
  } else {
    throw UsageError(path + ": no such trace (a mktrace run directory, an .otf2 anchor file or a TI index file)");
  }
  if (!extra.empty())
    for (const auto& [k, v] : parse_params({extra})) {
      std::ostringstream o;
      o.precision(17);
      o << v;
      run.params[k] = o.str();
    }
  return run;
}

/** @brief Writes text to path atomically (a temporary file renamed over it). */
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error(path + ": cannot write");
  }
  fs::rename(tmp, path);
}

int cmd_skel_build(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mkskel build");
  std::string output, name;
  double min_compute = 0;
  bool strict = false;
  std::vector<std::string> inputs;
  desc.add_options()("help,h", "this help")
      ("output,o", po::value(&output)->required(), "skeleton JSON to write")
      ("name", po::value(&name), "skeleton name (default: the program's file name)")
      ("min-compute-s", po::value(&min_compute)->default_value(0), "drop compute gaps whose mean is below this in every rank")
      ("strict", po::bool_switch(&strict), "treat ambiguities (models the runs cannot tell apart) as errors")
      ("trace", po::value(&inputs)->composing(), "traced run (positional)");
  po::positional_options_description pos;
  pos.add("trace", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    out << MKSKEL_USAGE << desc;
    return EXIT_OK;
  }
  po::notify(vm);
  if (inputs.empty()) throw UsageError("mkskel build: give at least one traced run");
  std::vector<trace::Run> runs;
  std::uintmax_t trace_bytes = 0;
  for (const auto& in : inputs) {
    runs.push_back(read_any_run(in));
    const std::string p = in.substr(0, in.find("::"));
    if (fs::is_directory(p)) {
      for (const auto& f : fs::directory_iterator(p))
        if (f.is_regular_file()) trace_bytes += f.file_size();
    } else {
      trace_bytes += fs::file_size(p);
    }
  }
  skeletons::build::BuildOptions bo;
  bo.name = name;
  bo.min_compute_s = min_compute;
  skeletons::build::BuildResult r;
  try {
    r = skeletons::build::build_skeleton(runs, bo);
  } catch (const skeletons::build::BuildError& e) {
    err << "mkskel: " << e.what() << "\n";
    return EXIT_FAILED;
  }
  for (const auto& a : r.ambiguities) err << "mkskel: ambiguous: " << a << "\n";
  for (const auto& w : r.warnings) err << "mkskel: warning: " << w << "\n";
  if (strict && !r.ambiguities.empty()) {
    err << "mkskel: " << r.ambiguities.size() << " ambiguities (--strict): nothing written\n";
    return EXIT_FAILED;
  }
  const std::string text = r.skeleton.dump(2) + "\n";
  const skeletons::Skeleton sk = skeletons::parse_skeleton(text, output);  // what mksim will read
  write_atomically(output, text);
  out << "wrote " << output << ": skeleton \"" << sk.name << "\", " << sk.groups.size() << " rank group(s), "
      << sk.blocks.size() << " block(s), " << sk.params.size() << " parameter(s)\n";
  out << "from " << runs.size() << " run(s), " << r.trace_events << " events, " << trace_bytes << " trace bytes; skeleton "
      << text.size() << " bytes\n";
  if (!r.ambiguities.empty())
    out << r.ambiguities.size() << " ambiguity(ies): see stderr and /provenance/ambiguities\n";
  return EXIT_OK;
}

void show_body(const nlohmann::json& body, int depth, std::ostream& out) {
  const std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
  for (const auto& b : body) {
    out << pad << b.value("op", "?");
    for (const char* f : {"count", "peer", "size", "tag", "root", "seconds", "flops", "cond", "prob", "req"})
      if (b.contains(f)) out << " " << f << "=" << (b[f].is_string() ? b[f].get<std::string>() : b[f].dump());
    if (b.contains("phase")) out << "  [phase " << b["phase"].get<std::string>() << "]";
    if (b.contains("fit"))
      for (const auto& [k, v] : b["fit"].items())
        if (v.contains("max_rel_error")) out << "  (" << k << " fit: max error " << v["max_rel_error"].dump() << ")";
    out << "\n";
    if (b.contains("body")) show_body(b["body"], depth + 1, out);
    if (b.contains("then")) {
      out << pad << "then:\n";
      show_body(b["then"], depth + 1, out);
    }
    if (b.contains("else")) {
      out << pad << "else:\n";
      show_body(b["else"], depth + 1, out);
    }
  }
}

int cmd_skel_show(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') throw UsageError("usage: mkskel show SKELETON.json");
  const skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(args[0], "skeletons/examples"));
  std::ifstream in(sk.file);
  const nlohmann::json j = nlohmann::json::parse(in);
  out << sk.file << ": \"" << sk.name << "\"\n";
  if (!sk.description.empty()) out << sk.description << "\n";
  out << "parameters:";
  for (const auto& p : sk.params) out << " " << p.name << (p.default_value ? "=" + std::to_string(*p.default_value) : "");
  out << "\n";
  if (j.contains("let"))
    for (const auto& [k, v] : j["let"].items()) out << "let " << k << " = " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  if (j.contains("body")) {
    out << "all ranks:\n";
    show_body(j["body"], 1, out);
  }
  if (j.contains("programs"))
    for (const auto& g : j["programs"]) {
      out << "ranks where " << (g["ranks"].is_string() ? g["ranks"].get<std::string>() : g["ranks"].dump()) << ":\n";
      show_body(g["body"], 1, out);
    }
  if (!sk.phases.empty()) {
    out << "communication phases:\n";
    for (std::size_t i = 0; i < sk.phases.size(); ++i) {
      const auto& ph = sk.phases[i];
      out << "  " << ph.name << ": " << ph.type;
      if (!ph.collective.empty()) out << " " << ph.collective;
      if (ph.type != "collective") out << ", depth " << ph.depth.text();
      out << ", " << ph.occurrences.text() << " occurrence(s)";
      if (ph.type != "collective") out << ", SL: " << ph.senders.text() << ", RL: " << ph.receivers.text();
      if (ph.overlap_s.text() != "0") out << ", overlapped computation " << ph.overlap_s.text() << " s";
      if (i + 1 < sk.phases.size()) out << (ph.independent_of_next ? "; independent of the next" : "; the next depends on it");
      out << "\n";
    }
  }
  if (j.contains("provenance") && j["provenance"].is_object()) {
    const auto& p = j["provenance"];
    if (p.contains("runs")) out << "built from " << p["runs"].size() << " run(s)\n";
    if (p.contains("ambiguities"))
      for (const auto& a : p["ambiguities"]) out << "ambiguous: " << a.get<std::string>() << "\n";
    if (p.contains("warnings"))
      for (const auto& a : p["warnings"]) out << "warning: " << a.get<std::string>() << "\n";
  }
  return EXIT_OK;
}

int cmd_skel_inspect(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') throw UsageError("usage: mkskel inspect TRACE");
  const trace::Run run = read_any_run(args[0]);
  out << run.dir << ": P=" << run.P;
  for (const auto& [k, v] : run.params) out << " " << k << "=" << v;
  out << ", " << (run.complete() ? "complete" : "NOT complete") << "\n";
  for (const auto& p : run.problems) out << "  " << p << "\n";
  for (const auto& r : run.ranks) {
    std::map<std::string, std::size_t> by_kind;
    std::int64_t sent = 0;
    for (const auto& e : r.events) {
      ++by_kind[std::string(trace::kind_name(e.kind))];
      if (trace::is_send(e.kind)) sent += e.bytes;
    }
    out << "rank " << r.rank << ": " << trace::status_name(r.status) << ", " << r.events.size() << " events, "
        << r.sites.size() << " call sites, " << sent << " bytes sent;";
    for (const auto& [k, n] : by_kind) out << " " << k << " " << n;
    out << "\n";
  }
  const auto unmatched = trace::unmatched_messages(run);
  out << unmatched.size() << " unmatched message(s)\n";
  for (const auto& m : unmatched) out << "  " << m << "\n";
  return unmatched.empty() ? EXIT_OK : EXIT_FAILED;
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

int run_mkskel(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty()) {
      err << MKSKEL_USAGE;
      return EXIT_USAGE;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      out << MKSKEL_USAGE;
      return EXIT_OK;
    }
    if (args[0] == "--version") {
      out << "mkskel " << MKSIM_VERSION << "\n";
      return EXIT_OK;
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "build") return cmd_skel_build(rest, out, err);
    if (args[0] == "show") return cmd_skel_show(rest, out);
    if (args[0] == "inspect") return cmd_skel_inspect(rest, out);
    throw UsageError("unknown command \"" + args[0] + "\"\n" + MKSKEL_USAGE);
  } catch (const po::error& e) {
    err << "mkskel: " << e.what() << "\n" << MKSKEL_USAGE;
    return EXIT_USAGE;
  } catch (const UsageError& e) {
    err << "mkskel: " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const skeletons::SkeletonError& e) {
    err << "mkskel: " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const trace::TraceError& e) {
    err << "mkskel: " << e.what() << "\n";
    return EXIT_USAGE;
  } catch (const std::exception& e) {
    err << "mkskel: " << e.what() << "\n";
    return EXIT_FAILED;
  }
}

}  // namespace mksim::sim
