// mksim's subcommands: predict (default), check, platform; mkskel's: build, show, inspect, compare. Parses options with Boost.Program_options
// (the only place that includes it) and maps every error to a message and an exit code.
#include "sim/cli/cli.hpp"

#include "sim/cli/common.hpp"

#include "calibration/fit_platform.hpp"
#include "platforms/generator.hpp"
#include "results/hdf5_io.hpp"
#include "results/summary.hpp"
#include "results/sweep_table.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/engine/load.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "sim/model/model_queries.hpp"
#include "sim/cli/diagnose_cli.hpp"
#include "sim/engine/replay.hpp"
#include "sim/cli/report_cli.hpp"
#include "sim/sweep/sweep.hpp"
#include "skeletons/emit.hpp"
#include "skeletons/error.hpp"
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/builder/skeldiff.hpp"
#include "skeletons/matching.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/otf2_reader.hpp"
#include "skeletons/trace/reader.hpp"
#include "skeletons/trace/ti_reader.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

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

const char* USAGE =
    "usage: mksim [predict] --platform FILE --P N [--skeleton FILE] [--param NAME=VALUE ...] [-o OUT.h5]\n"
    "                       [--timeline OUT.csv] [--seed S] [--cfg KEY:VALUE ...] [--collectives DB.h5,...]\n"
    "                       [--load FILE [--load-seed S] [--load-seeds N]]\n"
    "       mksim check --skeleton FILE [--P N] [--param NAME=VALUE ...]\n"
    "       mksim model --platform FILE --P N [--skeleton FILE] [--param NAME=VALUE ...] [--format text|latex|json]\n"
    "                   [--no-skew] [--cross-check [--load FILE] [--load-seed S] [--load-seeds N]] [--collectives DB.h5,...]\n"
    "                   [--optimize NAME --range LO..HI] [--Ps LIST] [--speedup]\n"
    "                   [--constant-time NAME=T0 --range LO..HI] [--isospeed NAME --range LO..HI]\n"
    "       mksim compare --platform FILE --skeleton FILE [--vs-platform FILE] [--vs-skeleton FILE]\n"
    "                     --scan P=LO..HI | NAME=LO..HI [--P N] [--param NAME=VALUE ...] [--no-skew]\n"
    "       mksim sweep --skeleton FILE --platform A[,B...] --P LIST [--param NAME=LIST ...] [--mode replay|model|both]\n"
    "                   -o OUT.h5 [--jobs J] [--timeout S] [--memory-limit GIB] [--retry-failed] [--config FILE]\n"
    "                   [--best NAME [--metric replay|model]] [--collectives DB.h5,...] [--load FILE [--load-seed S]]  (LIST: 1,2,4 | 4..4096 | 4..4096:x2 | 1..10:+1)\n"
    "       mksim sweep --from OUT.h5 --best NAME [--metric replay|model]\n"
    "       mksim diagnose SKELETON --platform FILE --P N [--param NAME=VALUE ...] [-o DIAG.h5]\n"
    "       mksim report IN.h5 [MORE.h5 ...] -o REPORT.html [--timeline FILE.csv ...] [--title TEXT]\n"
    "       mksim platform --machine {ipsc860,paragon,t3e,fattree,now} --nodes N -o OUT.xml\n"
    "       mksim --version | --help\n";

/** @brief Parses args into desc's variables; prints help and returns false when --help was given. */
bool parse_options(const std::vector<std::string>& args, const po::options_description& desc, std::ostream& out,
                   const char* usage = "", const po::positional_options_description* positional = nullptr) {
  po::variables_map vm;
  po::command_line_parser parser(args);
  parser.options(desc);
  if (positional) parser.positional(*positional);
  po::store(parser.run(), vm);
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
  unsigned long long seed = 1, load_seed = 1;
  std::string load;
  int load_seeds = 1;
  std::vector<std::string> params, cfg, colls;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "SimGrid platform XML (or a bundled name: paragon, t3e, ipsc860)")
      ("load", po::value(&load), "background load file: host speed and link profiles, stochastic busy loads (sim/engine/README.md)")
      ("load-seed", po::value(&load_seed)->default_value(1), "seed of the first draw of the load file's stochastic loads")
      ("load-seeds", po::value(&load_seeds)->default_value(1), "replay this many draws of the stochastic load: mean and 95% interval")
      ("P", po::value(&P)->required(), "number of MPI ranks to simulate")
      ("skeleton", po::value(&skeleton)->default_value(std::string(MKSIM_DATA_DIR) + "/skeletons/examples/atm2d.json"), "skeleton JSON")
      ("param", po::value(&params)->composing(), "parameter value NAME=VALUE (repeatable, or comma-separated)")
      ("output,o", po::value(&output), "write results to this HDF5 file (atomically)")
      ("timeline", po::value(&timeline), "write a per-rank event timeline (CSV) for small runs")
      ("seed", po::value(&seed)->default_value(1), "seed of the per-rank random generators")
      ("cfg", po::value(&cfg)->composing(), "extra SimGrid setting key:value (recorded with the result)")
      ("collectives", po::value(&colls)->composing(), "mkcalib bench databases DB.h5[,DB2.h5...], one per rank count: measured collectives");
  if (!parse_options(args, desc, out, USAGE)) return EXIT_OK;

  ReplayOptions opt;
  if (!colls.empty()) opt.collectives = std::make_shared<const CollectiveTable>(load_collective_table(colls));
  opt.platform_path = resolve_data(platform, "platforms");
  opt.P = P;
  opt.params = parse_params(params);
  opt.seed = seed;
  opt.timeline_csv = timeline;
  opt.simgrid_config = cfg;
  opt.warnings = &err;
  opt.load_file = load;
  opt.load_seed = load_seed;
  if (load_seeds < 1) throw UsageError("--load-seeds must be >= 1");
  if (load_seeds > 1 && load.empty()) throw UsageError("--load-seeds needs --load FILE");
  if (!opt.platform_path.empty() && !fs::exists(opt.platform_path))
    throw UsageError(platform + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  if (!output.empty()) {
    fs::path dir = fs::path(output).parent_path();
    if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");
  }
  skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(skeleton, "skeletons/examples"));
  opt.noise_gain = noise_gain_for(sk, opt);  // calibrate=program noise: replays in children, before this one's engine
  results::RunResult res = load_seeds > 1 ? replay_load_seeds(sk, opt, load_seeds) : replay(sk, opt);
  if (!output.empty()) results::write_run_hdf5(output, res);
  out << results::summarize(res);
  for (const auto& [k, v] : res.attributes)
    if (k == "load.hosts" || k == "load.links" || k == "noise.model") out << k << ": " << v << "\n";
  if (load_seeds > 1) {
    std::map<std::string, std::string> a(res.attributes.begin(), res.attributes.end());
    out << "background load: " << load_seeds << " draws (seeds " << a["load.seeds"] << "): mean " << a["load.mean_s"]
        << " s, 95% interval +- " << a["load.ci95_s"] << " s (times " << a["load.times_s"] << ")\n";
  }
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
    const auto m = skeletons::check_matching(sk, frame, P);
    if (m.skipped) {
      out << "messages not checked: more than 20,000,000 operations at P=" << P << "\n";
    } else if (m.ok()) {
      out << "messages and collectives pair at P=" << P << " (" << m.messages << " messages, " << m.collectives << " collective calls)\n";
    } else {
      out << "messages do not pair at P=" << P << ":\n";
      for (const auto& t : m.problems) out << "  " << t << "\n";
      if (m.more_problems) out << "  and " << m.more_problems << " more\n";
      return EXIT_FAILED;
    }
  }
  return EXIT_OK;
}

int cmd_platform(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim platform");
  std::string machine, output;
  long nodes = 0;
  desc.add_options()("help,h", "this help")("machine", po::value(&machine)->required(), "ipsc860, paragon, t3e, fattree or now (workstations on switched Ethernet)")
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

/** @brief "4,8,16" or "4..64" (powers of two) or "4..64:+4" (arithmetic) -> list of ranks. */
std::string fixed_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/** @brief A list of values: "a,b,c", "LO..HI" (doubling), "LO..HI:xF" (times F) or "LO..HI:+S" (step S). */
std::vector<double> parse_values(const std::string& text, const std::string& option) {
  auto num = [&](const std::string& t) {
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !std::isfinite(v)) throw UsageError(option + ": \"" + t + "\" is not a number");
    return v;
  };
  std::vector<double> out;
  if (const auto dots = text.find(".."); dots != std::string::npos) {
    const auto colon = text.find(':', dots);
    const double lo = num(text.substr(0, dots));
    const double hi = num(text.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2));
    char how = 'x';
    double by = 2;
    if (colon != std::string::npos) {
      const std::string step = text.substr(colon + 1);
      if (step.size() < 2 || (step[0] != 'x' && step[0] != '+'))
        throw UsageError(option + ": \"" + text + "\": the step is :xF (multiply) or :+S (add)");
      how = step[0];
      by = num(step.substr(1));
    }
    if (lo > hi) throw UsageError(option + ": empty range \"" + text + "\"");
    if ((how == 'x' && (by <= 1 || lo <= 0)) || (how == '+' && by <= 0))
      throw UsageError(option + ": \"" + text + "\" never reaches its end");
    for (double v = lo; v <= hi * (1 + 1e-12); v = how == 'x' ? v * by : v + by) {
      out.push_back(v);
      if (out.size() > 1000000) throw UsageError(option + ": \"" + text + "\" has more than a million values");
    }
    return out;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.push_back(num(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

/** @brief Rank counts: as parse_values, each a whole number in [1, 2^24]. */
std::vector<int> parse_ranks(const std::string& text, const std::string& option = "--Ps") {
  std::vector<int> out;
  for (double v : parse_values(text, option)) {
    if (v != std::floor(v) || v < 1 || v > (1 << 24))
      throw UsageError(option + ": " + fixed_text(v) + " in \"" + text + "\" is not a rank count");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

/** @brief "LO..HI" -> (lo, hi). */
std::pair<double, double> parse_range(const std::string& text, const std::string& option) {
  const auto dots = text.find("..");
  if (dots == std::string::npos) throw UsageError(option + " expects LO..HI, got \"" + text + "\"");
  char* e1 = nullptr;
  char* e2 = nullptr;
  const std::string a = text.substr(0, dots), b = text.substr(dots + 2);
  const double lo = std::strtod(a.c_str(), &e1), hi = std::strtod(b.c_str(), &e2);
  if (a.empty() || b.empty() || *e1 || *e2 || !(lo < hi)) throw UsageError(option + " expects LO..HI with LO < HI, got \"" + text + "\"");
  return {lo, hi};
}

std::string fixed(double v, int digits = 6) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string label_name(const std::string& l) { return l.empty() ? "(unlabelled)" : l; }

std::string sk_path(const std::string& s) { return resolve_data(s, "skeletons/examples"); }

int model_queries(const std::string& skeleton_path, const std::string& platform, int P, const std::vector<std::string>& params,
                  bool skew, const std::string& optimize, const std::string& range, const std::string& ps_text, bool speedup,
                  const std::string& constant_time, const std::string& isospeed, std::ostream& out) {
  const std::string platform_path = resolve_data(platform, "platforms");
  if (!fs::exists(platform_path)) throw UsageError(platform + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  const skeletons::Skeleton sk = skeletons::load_skeleton(skeleton_path);
  QueryOptions qo;
  qo.params = parse_params(params);
  qo.skew = skew;
  const std::vector<int> Ps = ps_text.empty() ? std::vector<int>{P} : parse_ranks(ps_text);
  int largest = P;
  for (int p : Ps) largest = std::max(largest, p);
  auto need_range = [&](const char* what) {
    if (range.empty()) throw UsageError(std::string(what) + " needs --range LO..HI");
    return parse_range(range, "--range");
  };
  // usage errors before SimGrid starts
  if (!optimize.empty()) need_range("--optimize");
  if (!constant_time.empty()) need_range("--constant-time");
  if (!isospeed.empty()) need_range("--isospeed");
  if (!constant_time.empty() && constant_time.find('=') == std::string::npos) throw UsageError("--constant-time expects NAME=T0 (seconds)");
  const MachineModel machine = load_machine_model(platform_path, largest);
  try {
    if (!optimize.empty()) {
      const auto [lo, hi] = need_range("--optimize");
      out << "best " << optimize << " in [" << fixed(lo) << ", " << fixed(hi) << "] (model" << (skew ? "" : ", no skew") << "):\n";
      out << "  P  best  T_s  dT/d" << optimize << "=0 at\n";
      for (const auto& o : optimize_param_over_P(sk, machine, Ps, qo, optimize, lo, hi)) {
        out << "  " << o.P << "  " << fixed(o.best) << "  " << fixed(o.T_s) << " ";
        if (o.roots.empty()) out << " (none: the best is at a bound or a kink)";
        for (const auto& r : o.roots) out << " " << fixed(r.value, 4) << (r.minimum ? " (min)" : " (max)");
        out << "\n";
      }
    }
    if (speedup) {
      out << "speedup (T(1) from the model at P=1):\n  P  T_s  speedup  efficiency\n";
      for (const auto& s : speedup_curve(sk, machine, Ps, qo))
        out << "  " << s.P << "  " << fixed(s.T_s) << "  " << fixed(s.speedup, 4) << "  " << fixed(s.efficiency, 4) << "\n";
    }
    if (!constant_time.empty()) {
      const auto eq = constant_time.find('=');
      if (eq == std::string::npos) throw UsageError("--constant-time expects NAME=T0 (seconds)");
      const std::string name = constant_time.substr(0, eq);
      const double T0 = std::strtod(constant_time.c_str() + eq + 1, nullptr);
      const auto [lo, hi] = need_range("--constant-time");
      out << "constant time T = " << fixed(T0) << " s: " << name << " per P\n  P  " << name << "  T_s\n";
      for (const auto& c : constant_time_curve(sk, machine, Ps, qo, name, T0, lo, hi)) {
        out << "  " << c.P << "  ";
        if (c.found) out << fixed(c.value) << "  " << fixed(c.T_s) << "\n";
        else out << "none  (" << c.note << ")\n";
      }
    }
    if (!isospeed.empty()) {
      const auto [lo, hi] = need_range("--isospeed");
      auto it = qo.params.find(isospeed);
      double value = 0;
      if (it != qo.params.end()) value = it->second;
      else {
        const auto frame = skeletons::bind_parameters(sk, P, qo.params);
        value = frame.at(static_cast<std::size_t>(sk.symbols.find(isospeed)));
      }
      const auto t = isospeed_scalability(sk, machine, qo, isospeed, P, value, Ps, lo, hi);
      out << "isospeed from P=" << t.p << ", " << isospeed << "=" << fixed(t.value) << ": W=" << fixed(t.W) << " flop, T=" << fixed(t.T_s)
          << " s, average unit speed " << fixed(t.speed_flops) << " flop/s\n  p'  " << isospeed << "'  T_s  psi\n";
      for (const auto& r : t.rows) {
        out << "  " << r.p_prime << "  ";
        if (r.found) out << fixed(r.value) << "  " << fixed(r.T_s) << "  " << fixed(r.psi, 5) << "\n";
        else out << "none  (" << r.note << ")\n";
      }
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return EXIT_OK;
}

int cmd_compare(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim compare");
  std::string platform, skeleton, vs_platform, vs_skeleton, scan_text;
  int P = 0;
  bool no_skew = false;
  std::vector<std::string> params;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "platform of the first combination")
      ("skeleton", po::value(&skeleton)->required(), "skeleton of the first combination")
      ("vs-platform", po::value(&vs_platform), "platform of the second (default: the first's)")
      ("vs-skeleton", po::value(&vs_skeleton), "skeleton of the second (default: the first's)")
      ("scan", po::value(&scan_text)->required(), "P=LO..HI (ranks) or NAME=LO..HI (a parameter, at --P)")
      ("P", po::value(&P), "ranks when scanning a parameter")
      ("param", po::value(&params)->composing(), "parameter value NAME=VALUE for both")
      ("no-skew", po::bool_switch(&no_skew), "leave out the platforms' skew term");
  if (!parse_options(args, desc, out, USAGE)) return EXIT_OK;
  if (vs_platform.empty()) vs_platform = platform;
  if (vs_skeleton.empty()) vs_skeleton = skeleton;
  if (vs_platform == platform && vs_skeleton == skeleton) throw UsageError("compare: give --vs-skeleton or --vs-platform (something to compare)");
  const auto eq = scan_text.find('=');
  if (eq == std::string::npos) throw UsageError("--scan expects P=LO..HI or NAME=LO..HI");
  RangeScan scan;
  scan.param = scan_text.substr(0, eq);
  std::tie(scan.lo, scan.hi) = parse_range(scan_text.substr(eq + 1), "--scan");
  scan.skew = !no_skew;
  if (scan.param != "P") {
    if (P < 1) throw UsageError("--scan " + scan.param + "=... needs --P");
    scan.P = P;
  }
  const int largest = scan.param == "P" ? static_cast<int>(scan.hi) : P;
  const std::string pa = resolve_data(platform, "platforms"), pb = resolve_data(vs_platform, "platforms");
  for (const auto& [given, path] : {std::pair{platform, pa}, std::pair{vs_platform, pb}})
    if (!fs::exists(path)) throw UsageError(given + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  const skeletons::Skeleton ska = skeletons::load_skeleton(sk_path(skeleton)), skb = skeletons::load_skeleton(sk_path(vs_skeleton));
  MachineModel ma, mb;
  if (pa == pb) {
    ma = load_machine_model(pa, largest);
    mb = ma;
  } else {  // two platforms: route tables filled in child processes (one SimGrid engine per process)
    ma = tabulate_machine_model(pa, largest);
    mb = tabulate_machine_model(pb, largest);
  }
  const std::string la = ska.name + "@" + fs::path(pa).stem().string(), lb = skb.name + "@" + fs::path(pb).stem().string();
  RangeComparison rc;
  try {
    rc = compare_range({la, &ska, &ma, parse_params(params)}, {lb, &skb, &mb, parse_params(params)}, scan);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  out << "range comparison over " << rc.param << " in [" << fixed(scan.lo) << ", " << fixed(scan.hi) << "]: A = " << la << ", B = " << lb << "\n";
  out << "  " << rc.param << "  T_A_s  T_B_s\n";
  for (const auto& smp : rc.samples) out << "  " << fixed(smp.x) << "  " << fixed(smp.T_a_s) << "  " << fixed(smp.T_b_s) << "\n";
  if (!rc.skipped.empty()) {
    out << "  skipped (a skeleton does not run there):";
    for (double x : rc.skipped) out << " " << fixed(x);
    out << "\n";
  }
  if (rc.crossings.empty()) out << "no crossing: " << (rc.segments.empty() ? std::string("?") : rc.segments.front().faster) << " is faster over the whole range\n";
  for (const auto& c : rc.crossings)
    out << "crossing at " << rc.param << " = " << fixed(c.at) << " (between " << fixed(c.below) << " and " << fixed(c.above) << "): "
        << c.faster_below << " faster below, " << c.faster_above << " above\n";
  return EXIT_OK;
}

/** @brief Prints which value of `over` is best per combination of the other columns, from a sweep's table. */
void print_best(const results::SweepTable& table, const std::string& over, const std::string& metric, std::ostream& out) {
  std::vector<results::BestRow> best;
  try {
    best = results::best_over(table, over, metric);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--best: ") + e.what());
  }
  if (best.empty()) {
    out << "best " << over << ": no point with a successful " << metric << " prediction\n";
    return;
  }
  out << "best " << over << " by " << metric << " (least predicted time) for each";
  for (const auto& [name, value] : best.front().group) out << " " << name;
  out << ":\n";
  for (const auto& [name, value] : best.front().group) out << name << "\t";
  out << over << "\ttime_s\tnext_best_s\tcompared\n";
  for (const results::BestRow& b : best) {
    for (const auto& [name, value] : b.group) out << value << "\t";
    out << b.best << "\t" << fixed(b.time_s) << "\t" << (std::isnan(b.runner_up_s) ? "-" : fixed(b.runner_up_s)) << "\t"
        << b.candidates << "\n";
  }
}

int cmd_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mksim sweep");
  std::string skeleton, output, mode = "replay", ps_text, config, best, metric, from;
  std::vector<std::string> platforms, params, colls;
  int jobs = 0;
  double timeout = 0, memory_gib = 0;
  unsigned long long seed = 1, load_seed = 1;
  std::string load;
  bool retry = false, no_skew = false, quiet = false;
  desc.add_options()("help,h", "this help")
      ("skeleton", po::value(&skeleton)->default_value(std::string(MKSIM_DATA_DIR) + "/skeletons/examples/atm2d.json"), "skeleton JSON")
      ("platform", po::value(&platforms)->composing(), "platform files or bundled names, comma-separated or repeated")
      ("P", po::value(&ps_text), "rank counts: 4,8,16 | 4..4096 (doubling) | 4..4096:x2 | 4..64:+4")
      ("param", po::value(&params)->composing(), "NAME=LIST, a parameter's values (repeatable): N=256,512 | K=1..256:x2")
      ("mode", po::value(&mode)->default_value("replay"), "replay, model or both")
      ("output,o", po::value(&output), "the table (HDF5); rerunning the same command resumes it")
      ("jobs,j", po::value(&jobs)->default_value(0), "simulations at once on this host (0: one per core; under mpirun: 1 per rank)")
      ("timeout", po::value(&timeout)->default_value(0), "seconds a simulation may take before it is killed (0: no limit)")
      ("memory-limit", po::value(&memory_gib)->default_value(0), "GiB of address space per simulation (0: no limit)")
      ("retry-failed", po::bool_switch(&retry), "run again the points the table records as failed")
      ("seed", po::value(&seed)->default_value(1), "seed of replay's per-rank random generators")
      ("no-skew", po::bool_switch(&no_skew), "leave out the model's skew term alpha*sqrt(P)")
      ("quiet,q", po::bool_switch(&quiet), "no progress bar")
      ("config", po::value(&config), "read these options from a file (one NAME = VALUE per line, as on the command line)")
      ("best", po::value(&best), "then print the best value of this column (K, P, platform...) for each combination of the others")
      ("metric", po::value(&metric)->default_value(""), "what --best compares: replay or model (default: replay when run)")
      ("from", po::value(&from), "answer --best from this existing table, without sweeping")
      ("collectives", po::value(&colls)->composing(), "mkcalib bench databases DB.h5[,DB2.h5...], one per rank count: measured collectives")
      ("load", po::value(&load), "background load file for replay (as mksim predict --load; one draw per point)")
      ("load-seed", po::value(&load_seed)->default_value(1), "seed of the load file's stochastic loads");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    out << USAGE << desc;
    return EXIT_OK;
  }
  if (vm.count("config")) {
    const std::string file = vm["config"].as<std::string>();
    std::ifstream in(file);
    if (!in) throw UsageError(file + ": cannot read the sweep configuration");
    try {
      po::store(po::parse_config_file(in, desc), vm);
    } catch (const po::error& e) {
      throw UsageError(file + ": " + e.what());
    }
  }
  po::notify(vm);
  if (!from.empty()) {
    if (best.empty()) throw UsageError("--from answers --best NAME: give the column to optimise");
    const results::SweepTable table = results::read_sweep_hdf5(from);
    print_best(table, best, metric.empty() ? "replay" : metric, out);
    return EXIT_OK;
  }
  if (output.empty()) throw UsageError("sweep: give the output table with -o FILE.h5");
  if (platforms.empty()) throw UsageError("sweep: give at least one --platform");
  if (ps_text.empty()) throw UsageError("sweep: give the rank counts with --P (e.g. 4..1024:x2)");
  if (mode != "replay" && mode != "model" && mode != "both") throw UsageError("--mode must be replay, model or both");
  if (jobs < 0 || timeout < 0 || memory_gib < 0) throw UsageError("--jobs, --timeout and --memory-limit cannot be negative");
  {
    fs::path dir = fs::path(output).parent_path();
    if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");
  }

  SweepOptions opt;
  opt.skeleton_path = resolve_data(skeleton, "skeletons/examples");
  const skeletons::Skeleton sk = skeletons::load_skeleton(opt.skeleton_path);
  for (const std::string& item : platforms) {
    std::size_t start = 0;
    while (start <= item.size()) {
      const auto comma = item.find(',', start);
      const std::string name = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const std::string file = resolve_data(name, "platforms");
      if (name.empty() || !fs::exists(file)) throw UsageError(name + ": no such platform file (bundled: ipsc860, paragon, t3e)");
      if (std::find(opt.grid.platforms.begin(), opt.grid.platforms.end(), name) != opt.grid.platforms.end())
        throw UsageError("--platform " + name + " is given twice");
      opt.grid.platforms.push_back(name);
      opt.grid.platform_files.push_back(file);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  opt.grid.Ps = parse_ranks(ps_text, "--P");
  std::map<std::string, std::vector<double>> axes;
  for (const std::string& item : params) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--param expects NAME=LIST, got \"" + item + "\"");
    const std::string name = item.substr(0, eq);
    if (name == "P") throw UsageError("give the rank counts with --P, not --param P=");
    if (axes.count(name)) throw UsageError("--param " + name + " is given twice");
    if (std::none_of(sk.params.begin(), sk.params.end(), [&](const skeletons::Param& p) { return p.name == name; }))
      throw UsageError("--param " + name + ": the skeleton has no parameter of that name");
    axes[name] = parse_values(item.substr(eq + 1), "--param " + name);
  }
  for (auto& [name, values] : axes) opt.grid.params.emplace_back(name, std::move(values));
  opt.replay = mode != "model";
  opt.model = mode != "replay";
  opt.skew = !no_skew;
  opt.seed = seed;
  opt.load_file = load;
  opt.load_seed = load_seed;
  opt.output = output;
  opt.jobs = jobs;
  opt.timeout_s = timeout;
  opt.memory_limit_bytes = memory_gib * 1024.0 * 1024.0 * 1024.0;
  opt.retry_failed = retry;
  if (!colls.empty()) opt.collectives = std::make_shared<const CollectiveTable>(load_collective_table(colls));
  opt.launcher = detect_launcher();
  opt.progress = &err;
  opt.progress_bar = !quiet && isatty(STDERR_FILENO);
  std::string command = "mksim sweep";
  for (const auto& a : args) command += " " + a;
  opt.command = command;

  const SweepSummary sum = run_sweep(sk, opt);
  if (!sum.wrote_table) return EXIT_OK;  // a distributed rank other than 0: rank 0 reports
  out << "sweep: " << sum.points << " points, " << sum.computed << " results computed, " << sum.reused
      << " reused from an earlier run, " << sum.failed << " failed" << (sum.failed ? " (their status and *_error columns say why)" : "")
      << ", " << fixed(sum.wall_s, 3) << " s\n"
      << "table: " << output << "\n";
  if (!best.empty()) print_best(results::read_sweep_hdf5(output), best, metric.empty() ? (opt.replay ? "replay" : "model") : metric, out);
  return sum.failed > 0 ? EXIT_FAILED : EXIT_OK;
}

int cmd_model(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim model");
  std::string platform, skeleton, format = "text";
  int P = 0;
  bool no_skew = false, cross_check = false, speedup = false;
  std::string optimize, range, ps_text, constant_time, isospeed, load;
  unsigned long long load_seed = 1;
  int load_seeds = 8;
  std::vector<std::string> params, colls;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "SimGrid platform XML (or a bundled name: paragon, t3e, ipsc860)")
      ("P", po::value(&P)->required(), "number of ranks (rank classes and routes are resolved here)")
      ("skeleton", po::value(&skeleton)->default_value(std::string(MKSIM_DATA_DIR) + "/skeletons/examples/atm2d.json"), "skeleton JSON")
      ("param", po::value(&params)->composing(), "parameter value NAME=VALUE (repeatable, or comma-separated)")
      ("format", po::value(&format)->default_value("text"), "text, latex or json")
      ("no-skew", po::bool_switch(&no_skew), "leave out the platform's skew term alpha*sqrt(P)")
      ("cross-check", po::bool_switch(&cross_check), "also replay the same point and compare, phase by phase; with the skew term, "
                                                      "the replay has the OS noise calibrated to it (load rule \"noise *\")")
      ("load", po::value(&load), "--cross-check: replay under this load file instead (sim/engine/README.md)")
      ("load-seed", po::value(&load_seed)->default_value(1), "--cross-check: seed of the first draw of the noise or load")
      ("load-seeds", po::value(&load_seeds)->default_value(8), "--cross-check: draws of a stochastic noise or load, mean and 95% interval")
      ("optimize", po::value(&optimize), "best integer value of this parameter (dT/dNAME = 0, seed 000 s.5.4), at each of --Ps")
      ("range", po::value(&range), "LO..HI: the range of --optimize, --constant-time or --isospeed")
      ("Ps", po::value(&ps_text), "rank counts for the queries: 4,8,16 or 4..128 (powers of two) or 4..64:+4")
      ("speedup", po::bool_switch(&speedup), "speedup T(1)/T(P) and efficiency over --Ps (seed 000 s.5.5)")
      ("constant-time", po::value(&constant_time), "NAME=T0: the NAME that makes T = T0 seconds at each of --Ps")
      ("isospeed", po::value(&isospeed), "NAME: isospeed scalability psi(P, p') from --P to each of --Ps (seed 001 s.3)")
      ("collectives", po::value(&colls)->composing(), "mkcalib bench databases DB.h5[,DB2.h5...], one per rank count: measured collectives");
  if (!parse_options(args, desc, out, USAGE)) return EXIT_OK;
  const bool query = !optimize.empty() || speedup || !constant_time.empty() || !isospeed.empty();
  if (query && !colls.empty()) throw UsageError("--collectives is not supported with --optimize, --speedup, --constant-time or --isospeed");
  if (query) return model_queries(sk_path(skeleton), platform, P, params, !no_skew, optimize, range, ps_text, speedup,
                                  constant_time, isospeed, out);
  if (format != "text" && format != "latex" && format != "json") throw UsageError("--format must be text, latex or json");
  const std::string platform_path = resolve_data(platform, "platforms");
  if (!fs::exists(platform_path)) throw UsageError(platform + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  const skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(skeleton, "skeletons/examples"));
  ModelOptions mo;
  mo.P = P;
  mo.params = parse_params(params);
  mo.skew = !no_skew;
  if (!colls.empty()) mo.collectives = std::make_shared<const CollectiveTable>(load_collective_table(colls));
  {
    auto frame = skeletons::bind_parameters(sk, P, mo.params);
    skeletons::check_for_run(sk, frame, P);
  }
  // The replay runs in a child process before this one loads SimGrid for the model's routes.
  results::RunResult replayed;
  std::string replay_noise;  // what the replay's noise or load is, for the report
  if (load_seeds < 1) throw UsageError("--load-seeds must be >= 1");
  if (cross_check) {
    ReplayOptions ro;
    ro.platform_path = platform_path;
    ro.P = P;
    ro.params = mo.params;
    ro.collectives = mo.collectives;
    ro.load_file = load;
    ro.load_seed = load_seed;
    if (load.empty() && mo.skew && platform_skew_alpha(platform_path) > 0) ro.load_text = "noise *";  // the model's skew, in replay
    const bool stochastic = !ro.load_text.empty() || (!load.empty() && read_load_spec(load).stochastic());
    replayed = stochastic ? replay_load_seeds(sk, ro, load_seeds) : replay_in_child(sk, ro);
    std::map<std::string, std::string> a(replayed.attributes.begin(), replayed.attributes.end());
    if (!ro.load_text.empty() && a["noise.detours"] == "0") {
      // no phase took a detour (pipelines only): the plain replay, reported as such
    } else if (stochastic) {
      replayed.predicted_time_s = std::stod(a["load.mean_s"]);  // compared as the mean of the draws
      replay_noise = (a.count("noise.model") ? "OS noise " + a["noise.model"] : "load " + a["load.model"]) + ", mean of " +
                     std::to_string(load_seeds) + " draws +- " + fixed(std::stod(a["load.ci95_s"])) + " s (95%)";
    } else if (!load.empty()) {
      replay_noise = "load " + a["load.model"];
    }
  }
  const MachineModel machine = load_machine_model(platform_path, P);
  const AnalyticModel m = derive_model(sk, machine, mo);
  if (format == "json") {
    out << model_json(m) << "\n";
  } else if (format == "latex") {
    out << "T = " << m.latex << "\n";
    for (const auto& t : m.terms) out << "% " << label_name(t.phase) << " (" << t.kind << "): " << t.latex << "\n";
  } else {
    out << "model of \"" << m.skeleton << "\" on " << m.machine << " at P=" << P;
    for (const auto& [k, v] : m.point) out << " " << k << "=" << fixed(v);
    out << "\n";
    out << "T = " << m.formula << "\n";
    out << "machine:";
    for (const auto& [k, v] : m.machine_symbols) out << " " << k << "=" << fixed(v);
    out << "\n";
    out << "T(P";
    for (const auto& p : m.params) out << ", " << p;
    out << ") = " << m.numeric << "\n";
    out << "T = " << fixed(m.value_s) << " s at this point\n";
    out << "critical class: rank " << m.critical_rank << " (" << m.critical_class << "), " << m.classes << " rank class(es)\n";
    out << "breakdown:\n";
    for (const auto& t : m.terms) {
      out << "  " << label_name(t.phase) << " " << t.kind << ": " << fixed(t.value_s) << " s = " << t.formula;
      if (!t.detail.empty()) out << "  [" << t.detail << "]";
      out << "\n";
    }
    for (const auto& n : m.notes) out << "note: " << n << "\n";
  }
  if (cross_check) {
    // Per phase label: the model's terms against two views of the replay: the time its critical
    // rank spent in the label (these add up to the replayed time, but a pipeline's fill lands where that rank
    // waits), and the label's end-to-end time (when the last rank left it, minus when the last rank left the
    // label that ended before it: right for phases that follow each other, meaningless for interleaved ones).
    // A phase is blamed for a gap only when both views disagree with the model.
    std::map<std::string, double> model_by_label, critical_by_label, end_by_label;
    // With the replay's OS noise (calibrated to the skew term) the model's skew counts in its phase and total;
    // without it, the skew term is left out (a replay without noise has no skew).
    const bool noisy = replay_noise.rfind("OS noise", 0) == 0;
    double skew = 0;
    for (const auto& t : m.terms) {
      if (t.kind == "skew") skew += t.value_s;
      if (t.kind != "skew" || noisy) model_by_label[t.phase] += t.value_s;
    }
    std::vector<std::pair<double, std::string>> ends;
    for (const auto& ph : replayed.phases) {
      critical_by_label[ph.phase] += ph.critical_rank_s;
      ends.emplace_back(ph.end_s, ph.phase);
    }
    std::sort(ends.begin(), ends.end());
    for (std::size_t i = 0; i < ends.size(); ++i) end_by_label[ends[i].second] = ends[i].first - (i ? ends[i - 1].first : 0.0);
    std::set<std::string> labels;
    for (const auto& [k, v] : model_by_label) labels.insert(k);
    for (const auto& [k, v] : critical_by_label) labels.insert(k);
    const double model_total = noisy ? m.value_s : m.value_s - skew;
    const double gap = (model_total - replayed.predicted_time_s) / replayed.predicted_time_s;
    out << "cross-check (replay at the same point"
        << (noisy ? "; the model's skew term " + fixed(skew) + " s is in, the replay has " + replay_noise
                  : (skew > 0 ? "; the model's skew term " + fixed(skew) + " s is left out: replay has no skew" : "") +
                        (replay_noise.empty() ? "" : "; the replay has " + replay_noise))
        << "):\n";
    out << "  total: model " << fixed(model_total) << " s, replay " << fixed(replayed.predicted_time_s) << " s, difference "
        << fixed(100 * gap, 3) << "%\n";
    out << "  per phase: model | replay, critical rank " << replayed.critical_rank << " | replay, end to end\n";
    std::string worst;
    double worst_abs = -1;
    for (const auto& l : labels) {
      const double a = model_by_label[l], b = critical_by_label[l], c = end_by_label[l];
      out << "  phase " << label_name(l) << ": " << fixed(a) << " s | " << fixed(b) << " s";
      if (b > 0) out << " (" << fixed(100 * (a - b) / b, 3) << "%)";
      out << " | " << fixed(c) << " s";
      if (c > 0) out << " (" << fixed(100 * (a - c) / c, 3) << "%)";
      out << "\n";
      const double blame = std::min(std::fabs(a - b), std::fabs(a - c));
      if (blame > worst_abs) {
        worst_abs = blame;
        worst = l;
      }
    }
    if (!labels.empty())
      out << "  largest gap: phase " << label_name(worst) << " (" << fixed(worst_abs) << " s, "
          << fixed(100 * worst_abs / replayed.predicted_time_s, 3) << "% of the replayed time)\n";
  }
  return EXIT_OK;
}

const char* MKSKEL_USAGE =
    "usage: mkskel build TRACE... -o OUT.json [--name NAME] [--min-compute-s S] [--strict] [--no-stack-regions]\n"
    "         [--sizes auto|exact|vary] [--pool]\n"
    "         TRACE: a mktrace run directory, an OTF2 anchor file (*.otf2) or a SimGrid TI index file;\n"
    "         append ::NAME=VALUE,... to set or override the run's parameters (required for OTF2/TI)\n"
    "       mkskel show SKELETON.json\n"
    "       mkskel inspect TRACE\n"
    "       mkskel compare SKELETON.json TRACE [--param NAME=VALUE ...] [--show N]\n"
    "       mkskel emit SKELETON.json -o PROG.c\n"
    "       mkskel diff A.json B.json [--P LIST] [--param NAME=V1[:V2...] ...] [--compute-tol R] [--compute-abs S]\n"
    "         [--flops-rate R] [--seed S] [--max N] [--no-structure] [--flatten-conditions]\n"
    "         [--compute-sum] [--prob-tol T]\n";

/** @brief Reads one traced run given as PATH[::NAME=VALUE,...]. */
trace::Run read_any_run(const std::string& arg) {
  std::string path = arg, extra;
  if (std::size_t sep = arg.find("::"); sep != std::string::npos) {
    path = arg.substr(0, sep);
    extra = arg.substr(sep + 2);
  }
  std::map<std::string, double> given;  // checked before the trace is read
  try {
    if (!extra.empty()) given = parse_params({extra});
  } catch (const UsageError& e) {
    throw UsageError(arg + ": " + e.what());  // which trace argument
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
  for (const auto& [k, v] : given) {
    std::ostringstream o;
    o.precision(17);
    o << v;
    run.params[k] = o.str();
  }
  return run;
}

int cmd_skel_build(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mkskel build");
  std::string output, name;
  double min_compute = 0;
  bool strict = false;
  bool no_stack_regions = false;
  bool pool = false;
  std::string sizes = "auto";
  std::vector<std::string> inputs;
  desc.add_options()("help,h", "this help")
      ("output,o", po::value(&output)->required(), "skeleton JSON to write")
      ("name", po::value(&name), "skeleton name (default: the program's file name)")
      ("min-compute-s", po::value(&min_compute)->default_value(0), "drop compute gaps whose mean is below this in every rank")
      ("strict", po::bool_switch(&strict), "treat ambiguities (models the runs cannot tell apart) and messages that do not pair at the traced runs as errors")
      ("pool", po::bool_switch(&pool),
       "pool compute over ranks that agree within noise (gross outliers of wall-clock durations trimmed, CPU times "
       "kept whole; evidence in fit.pool), not each rank's mean")
      ("no-stack-regions", po::bool_switch(&no_stack_regions),
       "region blocks only from mktrace.h annotations, not from the call-site stacks")
      ("sizes", po::value(&sizes)->default_value("auto"),
       "message sizes as identity when folding loops (exact), as statistics (vary: iterations that differ only in "
       "sizes fold, each call gets its mean size), or vary where that compresses the folded programs (auto)")
      ("trace", po::value(&inputs)->composing(), "traced run (positional)");
  po::positional_options_description pos;
  pos.add("trace", -1);
  if (!parse_options(args, desc, out, MKSKEL_USAGE, &pos)) return EXIT_OK;
  if (inputs.empty()) throw UsageError("mkskel build: give at least one traced run");
  std::vector<trace::Run> runs;
  std::uintmax_t trace_bytes = 0;
  // what an importer could not represent exactly (SimGrid TI traces) or the tracer did not record: counted, said,
  // never silent; a warning that only the run's directory sets apart is said once, with every run it concerns
  std::vector<std::pair<std::string, std::vector<std::string>>> run_warnings;  // (text after the run's dir, dirs)
  for (const auto& in : inputs) {
    runs.push_back(read_any_run(in));
    for (const auto& w : runs.back().warnings) {
      const std::string& dir = runs.back().dir;
      const bool own = !dir.empty() && w.rfind(dir, 0) == 0;
      const std::string rest = own ? w.substr(dir.size()) : w;
      auto it = std::find_if(run_warnings.begin(), run_warnings.end(), [&](const auto& x) { return x.first == rest; });
      if (!own || it == run_warnings.end()) run_warnings.push_back({rest, {own ? dir : ""}});
      else it->second.push_back(dir);
    }
    const std::string p = in.substr(0, in.find("::"));
    if (fs::is_directory(p)) {
      for (const auto& f : fs::directory_iterator(p))
        if (f.is_regular_file()) trace_bytes += f.file_size();
    } else {
      trace_bytes += fs::file_size(p);
    }
  }
  for (const auto& [rest, dirs] : run_warnings) {
    if (dirs.size() == 1) {
      err << "mkskel: warning: " << dirs.front() << rest << "\n";
      continue;
    }
    std::string all;
    for (const auto& d : dirs) all += (all.empty() ? "" : ", ") + d;
    err << "mkskel: warning: " << dirs.size() << " runs (" << all << "), in each " << (rest.rfind('/', 0) == 0 ? rest.substr(1) : rest) << "\n";
  }
  skeletons::builder::BuildOptions bo;
  bo.name = name;
  bo.min_compute_s = min_compute;
  bo.stack_regions = !no_stack_regions;
  bo.pool_compute = pool;
  if (sizes == "auto") bo.vary_sizes = -1;
  else if (sizes == "exact") bo.vary_sizes = 0;
  else if (sizes == "vary") bo.vary_sizes = 1;
  else throw UsageError("mkskel build: --sizes is auto, exact or vary, not \"" + sizes + "\"");
  skeletons::builder::BuildResult r;
  try {
    r = skeletons::builder::build_skeleton(runs, bo);
  } catch (const skeletons::builder::BuildError& e) {
    err << "mkskel: " << e.what() << "\n";
    return EXIT_FAILED;
  }
  for (const auto& a : r.ambiguities) err << "mkskel: ambiguous: " << a << "\n";
  for (const auto& w : r.warnings) err << "mkskel: warning: " << w << "\n";
  for (const auto& m : r.matching) err << "mkskel: does not pair: " << m << "\n";
  if (strict && (!r.ambiguities.empty() || !r.matching.empty())) {
    err << "mkskel: " << r.ambiguities.size() << " ambiguities, " << r.matching.size()
        << " pairing problem(s) at the traced runs (--strict): nothing written\n";
    return EXIT_FAILED;
  }
  const std::string text = r.skeleton.dump(2) + "\n";
  const skeletons::Skeleton sk = skeletons::parse_skeleton(text, output);  // what mksim will read
  calibration::write_file_atomically(output, text);  // temporary file beside it, fsync, rename: never a partial file
  out << "wrote " << output << ": skeleton \"" << sk.name << "\", " << sk.groups.size() << " rank group(s), "
      << sk.blocks.size() << " block(s), " << sk.params.size() << " parameter(s)\n";
  out << "from " << runs.size() << " run(s), " << r.trace_events << " events, " << trace_bytes << " trace bytes; skeleton "
      << text.size() << " bytes\n";
  if (!r.ambiguities.empty())
    out << r.ambiguities.size() << " ambiguity(ies): see stderr and /provenance/ambiguities\n";
  if (r.matching.empty())
    out << "messages and collectives pair at every traced run\n";
  else
    out << "WARNING: the skeleton does not pair its messages at the traced runs (" << r.matching.size()
        << " problem(s): see stderr and /provenance/matching); the replay will stop there\n";
  return EXIT_OK;
}

// What the builder did with a compute gap's ranks (fit.pool, skeletons/builder/pool.hpp), in one phrase.
std::string describe_pool(const nlohmann::json& p) {
  const auto num = [&](const char* k) { return p.contains(k) ? p[k].dump() : std::string("?"); };
  const std::string decision = p.value("decision", "?");
  const bool evidence = p.contains("within_sd") && p["within_sd"].is_number() && p["within_sd"].get<double>() >= 0;
  const std::string test = evidence ? "chi2 " + num("chi2") + (decision == "pooled" ? " vs " : " > ") + num("chi2_critical")
                                    : std::string("no repeated durations");
  std::string text;
  if (decision == "split")  // the condition is the if() of the expression
    text = "ranks split in two groups: x" + num("largest_ratio") + " apart, " + test;
  else if (decision == "mean")
    text = "ranks differ (x" + num("largest_ratio") + ", " + test + "), no condition on rank separates them: their mean";
  else
    text = num("ranks") + " ranks pooled (largest ratio x" + num("largest_ratio") + ", " + test + ")";
  const std::string d = num("trimmed_durations"), r = num("trimmed_ranks");
  if (d != "0" || r != "0") text += "; trimmed " + d + " duration(s), " + r + " rank(s)";
  return text;
}

void show_body(const nlohmann::json& body, int depth, std::ostream& out) {
  const std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
  for (const auto& b : body) {
    out << pad << b.value("op", "?");
    for (const char* f : {"name", "count", "peer", "size", "tag", "root", "seconds", "flops", "cond", "prob", "coin", "coin_rank", "draw", "req"})
      if (b.contains(f)) out << " " << f << "=" << (b[f].is_string() ? b[f].get<std::string>() : b[f].dump());
    if (b.contains("dist") && b["dist"].is_object()) {  // format v2: how a compute amount varies around its mean
      const auto& d = b["dist"];
      const auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
      out << " dist=" << d.value("type", "?");
      if (d.contains("cv")) out << "(cv " << text(d["cv"]) << ")";
      if (d.contains("quantiles") && d["quantiles"].is_array() && d["quantiles"].size() == 11)
        out << "(min " << d["quantiles"][0].dump() << ", median " << d["quantiles"][5].dump() << ", max "
            << d["quantiles"][10].dump() << " x mean)";
    }
    if (b.contains("phase")) out << "  [phase " << b["phase"].get<std::string>() << "]";
    if (b.contains("fit"))
      for (const auto& [k, v] : b["fit"].items()) {
        if (!v.is_object()) continue;
        if (v.contains("max_rel_error")) out << "  (" << k << " fit: max error " << v["max_rel_error"].dump() << ")";
        if (v.contains("guard")) out << "  (" << k << " held in its domain: " << v["guard"].get<std::string>() << ")";
        if (k == "pool") out << "  (" << describe_pool(v) << ")";
        if (k == "warm_up" && v.contains("share") && v["share"].is_number())  // once per run: the loop after it's first steps
          out << "  (warm-up of the loop after it: its first iterations beyond " << v.value("ratio", 3.0) << "x the others' median at "
              << v.value("with_warm_up", 0) << " of " << v.value("gaps", 0) << " rank(s), " << 100 * v["share"].get<double>()
              << "% of that gap's time)";
        for (const auto* f : {&v, v.contains("then") ? &v["then"] : nullptr, v.contains("else") ? &v["else"] : nullptr})
          if (f && f->is_object() && f->contains("trimmed_runs"))
            out << "  (runs left out as outliers: " << (*f)["trimmed_runs"].size() << ")";
      }
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

// The skeleton expanded at a traced run's P and parameters against that run, rank by rank (holdout.hpp):
// the hold-out check of a skeleton on a configuration it was not built from. Exit 0 when every rank is exact.
int cmd_skel_compare(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkskel compare");
  std::vector<std::string> positional, param_items;
  std::size_t show = 5;
  desc.add_options()("help,h", "this help")
      ("param", po::value(&param_items)->composing(), "NAME=VALUE: a skeleton parameter (default: the run's own)")
      ("show", po::value(&show)->default_value(5), "ranks whose first difference is printed")
      ("input", po::value(&positional)->composing(), "SKELETON.json TRACE (positional)");
  po::positional_options_description pos;
  pos.add("input", -1);
  if (!parse_options(args, desc, out, MKSKEL_USAGE, &pos)) return EXIT_OK;
  if (positional.size() != 2) throw UsageError("usage: mkskel compare SKELETON.json TRACE [--param NAME=VALUE ...]");
  const skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(positional[0], "skeletons/examples"));
  const trace::Run run = read_any_run(positional[1]);
  std::map<std::string, double> params;
  for (const auto& [k, v] : run.params) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0') throw UsageError(run.dir + ": parameter " + k + "=" + v + " is not a number");
    params[k] = d;
  }
  for (const auto& [k, v] : parse_params(param_items)) params[k] = v;
  const auto rep = skeletons::builder::compare_with_trace(sk, run, params);
  out << "compare " << sk.file << " with " << run.dir << " (P=" << run.P;
  for (const auto& [k, v] : params) out << " " << k << "=" << v;
  out << ")\n";
  std::size_t shown = 0;
  for (const auto& r : rep.ranks) {
    if (r.exact() || shown >= show) continue;
    ++shown;
    out << "rank " << r.rank << ": ";
    if (!r.error.empty()) {
      out << "the skeleton cannot be expanded: " << r.error << "\n";
      continue;
    }
    out << "operation " << *r.first_difference << " of " << r.traced << " traced (" << r.expanded << " expanded): skeleton "
        << (r.skeleton_op ? skeletons::builder::describe(*r.skeleton_op) : std::string("ends")) << ", trace "
        << (r.trace_op ? skeletons::builder::describe(*r.trace_op) : std::string("ends")) << "\n";
  }
  const std::size_t exact = rep.exact_ranks();
  out << exact << " of " << rep.P << " ranks exact (" << rep.traced_ops() << " traced operations)\n";
  // Where operations do not match one by one (a data-dependent program's skeleton draws them from rates), what
  // each rank does in sum: the relative difference per rank, skeleton against trace, mean and worst.
  const auto ve = skeletons::builder::volume_errors(rep);
  if (ve.ranks > 0) {
    auto line = [&](const char* what, const skeletons::builder::VolumeErrors::Stat& st) {
      out << "  " << std::left << std::setw(22) << what << std::right << std::fixed << std::setprecision(1) << std::setw(7)
          << 100 * st.mean << "% " << std::setw(7) << 100 * st.worst << "% (rank " << st.worst_rank << ")\n";
      out.unsetf(std::ios::floatfield);
      out << std::setprecision(6);
    };
    out << "per-rank sums, skeleton against trace over " << ve.ranks << " rank(s):   mean   worst\n";
    line("messages sent", ve.messages);
    line("bytes sent", ve.bytes);
    line("collectives", ve.collectives);
    line("compute (s)", ve.compute_s);
    bool flops = false;
    for (const auto& r : rep.ranks) flops = flops || r.traced_sum.compute_flops > 0 || r.skeleton_sum.compute_flops > 0;
    if (flops) line("compute (flops)", ve.compute_flops);
  }
  return exact == rep.ranks.size() ? EXIT_OK : EXIT_FAILED;
}

// A runnable MPI C program from a skeleton (skeletons/emit.hpp): a proxy application that takes the skeleton's
// parameters as NAME=VALUE arguments.
int cmd_skel_emit(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkskel emit");
  std::string output;
  std::vector<std::string> positional;
  desc.add_options()("help,h", "this help")
      ("output,o", po::value(&output)->required(), "C program to write")
      ("input", po::value(&positional)->composing(), "SKELETON.json (positional)");
  po::positional_options_description pos;
  pos.add("input", -1);
  if (!parse_options(args, desc, out, MKSKEL_USAGE, &pos)) return EXIT_OK;
  if (positional.size() != 1) throw UsageError("usage: mkskel emit SKELETON.json -o PROG.c");
  const skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(positional[0], "skeletons/examples"));
  const std::string text = skeletons::emit_c(sk);
  calibration::write_file_atomically(output, text);
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n';
  out << "wrote " << output << ": MPI C program of skeleton \"" << sk.name << "\" (" << lines << " lines, "
      << sk.blocks.size() << " block(s), " << sk.comms.size() << " communicator(s), " << sk.params.size() << " parameter(s))\n"
      << "build: mpicc -O2 -o prog " << output << " -lm  (or smpicc for SMPI); run: mpirun -np P ./prog";
  for (const auto& p : sk.params) out << " " << p.name << "=VALUE";
  out << "\n";
  return EXIT_OK;
}

// Whether two skeletons are the same program (skeldiff.hpp): the communication structure, and every rank's
// operations expanded at every P of a list and every parameter point. Exit 0 when the same, 1 on a difference.
int cmd_skel_diff(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkskel diff");
  std::vector<std::string> positional, param_items;
  std::string P_list;
  skeletons::builder::DiffOptions opt;
  desc.add_options()("help,h", "this help")
      ("P", po::value(&P_list)->default_value("2-8,12,16,17,24,32,48,64,256"), "rank counts: a comma list of N or A-B")
      ("param", po::value(&param_items)->composing(),
       "NAME=V1[:V2...][,NAME=...]: parameter values; every combination is a point (default: A's defaults)")
      ("compute-tol", po::value(&opt.compute_rel)->default_value(0.5), "relative tolerance of each rank's total compute (negative: not compared)")
      ("compute-abs", po::value(&opt.compute_abs_s)->default_value(1e-3), "absolute floor of that tolerance, seconds")
      ("flops-rate", po::value(&opt.flops_rate)->default_value(0), "flop/s, to compare compute in flops with compute in seconds")
      ("seed", po::value(&opt.seed)->default_value(1), "seed of both expansions (prob branches, distributions)")
      ("max", po::value(&opt.max_differences)->default_value(20), "distinct differences listed")
      ("prob-tol", po::value(&opt.prob_tol)->default_value(-1),
       "prob branches: their probabilities within this absolute tolerance, and B expanded with A's (equal in distribution)")
      ("no-structure", "compare the expansions only, not the block trees")
      ("flatten-conditions", "compare the structure with condition branches dissolved into their bodies (nested or flat conditions alike)")
      ("compute-sum", "compare compute as the sum over all ranks (prob branches that pick compute amounts), not per rank")
      ("input", po::value(&positional)->composing(), "A.json B.json (positional)");
  po::positional_options_description pos;
  pos.add("input", -1);
  if (!parse_options(args, desc, out, MKSKEL_USAGE, &pos)) return EXIT_OK;
  if (positional.size() != 2) throw UsageError("usage: mkskel diff A.json B.json [--P LIST] [--param NAME=V1[:V2...] ...]");
  opt.structure = std::find(args.begin(), args.end(), "--no-structure") == args.end();
  opt.flatten_conditions = std::find(args.begin(), args.end(), "--flatten-conditions") != args.end();
  opt.compute_per_rank = std::find(args.begin(), args.end(), "--compute-sum") == args.end();
  opt.P.clear();
  auto integer = [&](const std::string& s) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || v < 1) throw UsageError("--P: \"" + s + "\" is not a rank count");
    return v;
  };
  for (std::size_t at = 0; at <= P_list.size();) {
    const std::size_t comma = std::min(P_list.find(',', at), P_list.size());
    const std::string item = P_list.substr(at, comma - at);
    if (const std::size_t dash = item.find('-'); dash != std::string::npos) {
      const int lo = integer(item.substr(0, dash)), hi = integer(item.substr(dash + 1));
      if (hi < lo || hi - lo > 100000) throw UsageError("--P: \"" + item + "\" is not a range");
      for (int p = lo; p <= hi; ++p) opt.P.push_back(p);
    } else {
      opt.P.push_back(integer(item));
    }
    at = comma + 1;
  }
  // NAME=V1:V2 lists, every combination a point
  std::vector<std::pair<std::string, std::vector<double>>> axes;
  for (const std::string& items : param_items)
    for (std::size_t at = 0; at <= items.size();) {
      const std::size_t comma = std::min(items.find(',', at), items.size());
      const std::string item = items.substr(at, comma - at);
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--param: \"" + item + "\" is not NAME=V1[:V2...]");
      std::vector<double> values;
      std::string list = item.substr(eq + 1);
      for (std::size_t v = 0; v <= list.size();) {
        const std::size_t colon = std::min(list.find(':', v), list.size());
        values.push_back(parse_params({item.substr(0, eq) + "=" + list.substr(v, colon - v)}).begin()->second);
        v = colon + 1;
      }
      axes.emplace_back(item.substr(0, eq), values);
      at = comma + 1;
    }
  if (!axes.empty()) {
    opt.points.assign(1, {});
    for (const auto& [name, values] : axes) {
      std::vector<std::map<std::string, double>> next;
      for (const auto& pt : opt.points)
        for (const double v : values) {
          auto q = pt;
          q[name] = v;
          next.push_back(q);
        }
      opt.points = std::move(next);
    }
  }
  const skeletons::Skeleton a = skeletons::load_skeleton(resolve_data(positional[0], "skeletons/examples"));
  const skeletons::Skeleton b = skeletons::load_skeleton(resolve_data(positional[1], "skeletons/examples"));
  const auto rep = skeletons::builder::diff_skeletons(a, b, opt);
  out << "diff A " << a.file << " with B " << b.file << "\n" << skeletons::builder::format_diff(rep);
  return rep.same() ? EXIT_OK : EXIT_FAILED;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_guarded("mksim", USAGE, err, [&]() -> int {
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
    if (args[0] == "model") return cmd_model(rest, out);
    if (args[0] == "compare") return cmd_compare(rest, out);
    if (args[0] == "sweep") return cmd_sweep(rest, out, err);
    if (args[0] == "report") return cmd_report(rest, out, err);
    if (args[0] == "diagnose") return cmd_diagnose(rest, out, err);
    if (args[0] == "platform") return cmd_platform(rest, out);
    if (!args[0].empty() && args[0][0] != '-') throw UsageError("unknown command \"" + args[0] + "\"");
    return cmd_predict(args, out, err);
  });
}

int run_mkskel(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_guarded("mkskel", MKSKEL_USAGE, err, [&]() -> int {
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
    if (args[0] == "compare") return cmd_skel_compare(rest, out);
    if (args[0] == "emit") return cmd_skel_emit(rest, out);
    if (args[0] == "diff") return cmd_skel_diff(rest, out);
    throw UsageError("unknown command \"" + args[0] + "\"\n" + MKSKEL_USAGE);
  });
}

}  // namespace mksim::sim
