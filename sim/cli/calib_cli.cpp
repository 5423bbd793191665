// mkcalib's subcommands: bench (run the MPI microbenchmarks into a resumable database), show (print it), fit
// (a calibrated platform from a database and/or measured runs), validate (held-out runs on a platform) and load
// (the background load of this machine from /proc samples, as a load file for mksim --load).
// Options parsed with Boost.Program_options; the work is in mksim::calibration.
#include "sim/cli/calib_cli.hpp"

#include "calibration/bench.hpp"
#include "calibration/fit_platform.hpp"
#include "calibration/load_probe.hpp"
#include "calibration/pattern_figures.hpp"
#include "calibration/pattern_table.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"
#include "sim/cli/common.hpp"
#include "results/calib_db.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <filesystem>
#include <iomanip>
#include <stdexcept>

#ifndef MKCALIB_MICROBENCH
#define MKCALIB_MICROBENCH "mkcalib_microbench"
#endif
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
    "usage: mkcalib bench -np N -o FILE.h5 [--machine NAME] [--reps R] [--warmup W] [--max-size BYTES]\n"
    "                     [--sizes B1,B2,...] [--eager-max BYTES] [--kernels LIST] [--quick] [--min-rep-time S]\n"
    "                     [--microbench PATH] [--mpirun PATH] [--mpirun-arg ARG ...]\n"
    "       mkcalib show FILE.h5\n"
    "       mkcalib fit --platform BASE [--db FILE.h5] [--runs RUNS.csv --skeleton S] [--fit LIST] [--max-error E]\n"
    "                   [--no-replay] -o CALIBRATED.xml\n"
    "       mkcalib validate --platform CALIBRATED.xml --skeleton S --runs HELDOUT.csv [--noise-seeds N]\n"
    "       mkcalib table-runs --table LINES.csv --machine NAME [-P N] [--steps S] -o RUNS.csv\n"
    "       mkcalib table-check --table LINES.csv --machine NAME --platform XML [-P N] [--steps S]\n"
    "       mkcalib patterns --platform BASE (--db FILE.h5 | --table LINES.csv --machine NAME) -o OUT.xml\n"
    "       mkcalib load -o LOAD.txt [--window S] [--interval S] [--cpus LIST] [--tasks K|auto] [--demand cpu|wall]\n"
    "                    [--rule speed|busy] [--hosts H1,H2,...] [--pids PID,... | --autogroups]\n"
    "       mkcalib --version | --help\n"
    "kernels: pingpong send_overhead recv_overhead stream shift1d halo2d halo3d barrier bcast reduce allreduce\n"
    "         allgather alltoall gather scatter compute; groups: all p2p overheads patterns collectives\n"
    "figures (--fit): speed bandwidth latency s r o alpha (all), eager_per_byte handshake (only by name)\n";

// -np is a long option with one dash (as mpirun spells it); allow_long_disguise accepts it.
bool parse_options(const std::vector<std::string>& args, const po::options_description& desc,
                   const po::positional_options_description& positional, std::ostream& out) {
  po::variables_map vm;
  const int style = po::command_line_style::default_style | po::command_line_style::allow_long_disguise;
  po::store(po::command_line_parser(args).options(desc).positional(positional).style(style).run(), vm);
  if (vm.count("help")) {
    out << USAGE << desc;
    return false;
  }
  po::notify(vm);
  return true;
}

std::vector<std::uint64_t> parse_sizes(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || item[0] == '-')
      throw UsageError("--sizes: \"" + item + "\" is not a size in bytes");
    sizes.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

results::CalibDb read_input(const std::string& path) {
  if (!fs::exists(path)) throw UsageError(path + ": no such file");
  try {
    return results::read_calib_db(path);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

int cmd_bench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mkcalib bench");
  int np = 2, reps = -1, warmup = -1;
  std::uint64_t max_size = 16u << 20, eager_max = 2048;
  double min_rep_time = 0;
  std::string output, machine, kernels = "all", sizes, microbench = MKCALIB_MICROBENCH, mpirun = "mpirun";
  std::vector<std::string> mpirun_args;
  bool quick = false;
  desc.add_options()("help,h", "this help")
      ("np", po::value(&np)->default_value(2), "MPI ranks (mpirun -np)")
      ("output,o", po::value(&output)->required(), "database file (HDF5); an existing one is resumed")
      ("machine", po::value(&machine), "machine name stored in the file (default: the file name's stem)")
      ("reps", po::value(&reps), "timed repetitions per size (default 20, quick 5)")
      ("warmup", po::value(&warmup), "untimed repetitions before them (default 2, quick 1)")
      ("max-size", po::value(&max_size)->default_value(max_size), "largest message size in bytes")
      ("sizes", po::value(&sizes), "message sizes in bytes, comma-separated (instead of the default list)")
      ("eager-max", po::value(&eager_max)->default_value(eager_max),
       "largest message size of the s, r, o kernels (bytes; OpenMPI's shared-memory eager limit, 4096,\n"
       "includes its header, so 4096-byte messages already take the rendezvous path)")
      ("kernels", po::value(&kernels)->default_value(kernels), "kernels or groups to measure, comma-separated")
      ("quick", po::bool_switch(&quick), "few sizes and repetitions (a first look, tests)")
      ("min-rep-time", po::value(&min_rep_time), "seconds one repetition should last (default 1e-3, quick 1e-4)")
      ("microbench", po::value(&microbench)->default_value(microbench), "path of mkcalib_microbench")
      ("mpirun", po::value(&mpirun)->default_value(mpirun), "mpirun to use")
      ("mpirun-arg", po::value(&mpirun_args)->composing(), "extra mpirun argument (repeatable)");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;

  if (np < 1) throw UsageError("-np must be at least 1");
  calibration::BenchRequest request;
  try {
    request.kernels = calibration::parse_kernel_list(kernels);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--kernels: ") + e.what());
  }
  if (np < 2)
    for (calibration::Kernel k : request.kernels)
      if (calibration::size_list_of(k) == calibration::SizeList::EAGER || k == calibration::Kernel::PINGPONG)
        throw UsageError(std::string("kernel ") + calibration::kernel_name(k) + " needs -np 2 or more");
  request.config = calibration::default_config(quick, max_size, eager_max, np);
  if (!sizes.empty()) {
    request.config.message_sizes = parse_sizes(sizes);
    request.config.eager_sizes.clear();
    for (std::uint64_t s : request.config.message_sizes)
      if (s <= eager_max) request.config.eager_sizes.push_back(s);
  }
  if (reps >= 0) request.config.reps = reps;
  if (warmup >= 0) request.config.warmup = warmup;
  if (min_rep_time > 0) request.config.min_rep_time_s = min_rep_time;
  if (request.config.reps < 2) throw UsageError("--reps must be at least 2 (a confidence interval needs two)");
  if (request.config.message_sizes.empty()) throw UsageError("no message sizes (--max-size or --sizes)");
  if (request.config.message_sizes.size() > 256) throw UsageError("at most 256 message sizes");
  for (calibration::Kernel k : request.kernels)
    if (calibration::sizes_for(request.config, k).empty())
      throw UsageError(std::string("kernel ") + calibration::kernel_name(k) + " has no sizes (eager sizes are those <= --eager-max " + std::to_string(eager_max) + ")");
  if (!fs::exists(microbench))
    throw UsageError(microbench + ": microbenchmark not found (build target mkcalib_microbench, or pass --microbench)");

  request.output = output;
  request.machine = machine.empty() ? fs::path(output).stem().string() : machine;
  request.launcher.microbench = microbench;
  request.launcher.mpirun = mpirun;
  request.launcher.mpirun_args = mpirun_args;
  const fs::path dir = fs::path(output).parent_path();
  if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");
  if (fs::exists(output)) read_input(output);  // an unreadable file is bad input, reported before measuring

  const calibration::BenchReport report = calibration::run_bench(request, err);
  out << "wrote " << output << ": " << report.measured.size() << " kernel(s) measured, " << report.skipped.size()
      << " already there, in " << std::fixed << std::setprecision(1) << report.wall_s << " s\n";
  out.unsetf(std::ios::floatfield);
  return EXIT_OK;
}

int cmd_show(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkcalib show");
  std::string file;
  desc.add_options()("help,h", "this help")("file", po::value(&file)->required(), "database file (HDF5)");
  po::positional_options_description positional;
  positional.add("file", 1);
  if (!parse_options(args, desc, positional, out)) return EXIT_OK;
  out << calibration::format_report(read_input(file));
  return EXIT_OK;
}

/** @brief The file `name` names (a path, or a bundled platform or skeleton); a usage error when there is none. */
std::string existing_data(const std::string& name, const char* folder) {
  const std::string path = resolve_data(name, folder);
  if (path.empty() || !fs::exists(path))
    throw UsageError(name + ": no such file (bundled " + folder + " are looked up in " + MKSIM_DATA_DIR + "/" + folder + ")");
  return path;
}

skeletons::Skeleton load_skeleton_input(const std::string& name) {
  try {
    return skeletons::load_skeleton(existing_data(name, "skeletons/examples"));
  } catch (const skeletons::SkeletonError& e) {
    throw UsageError(e.what());
  }
}

std::vector<std::string> param_names(const skeletons::Skeleton& sk) {
  std::vector<std::string> names;
  for (const auto& p : sk.params) names.push_back(p.name);
  return names;
}

calibration::MeasuredRuns read_runs(const std::string& path, const skeletons::Skeleton& sk) {
  if (!fs::exists(path)) throw UsageError(path + ": no such runs file");
  try {
    return calibration::read_measured_runs(path, param_names(sk));
  } catch (const calibration::RunsError& e) {
    throw UsageError(e.what());
  }
}

int cmd_fit(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mkcalib fit");
  std::string platform, db, runs, skeleton, output, fit;
  double max_error = 0.25;
  bool no_replay = false;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "base platform: a generated XML file or a bundled name (paragon, t3e, ipsc860)")
      ("db", po::value(&db), "mkcalib bench database: s, r, o, latency, bandwidth, eager threshold (and node speed without runs)")
      ("runs", po::value(&runs), "measured runs, CSV: P, the skeleton's parameters, time_s (calibration/README.md)")
      ("skeleton", po::value(&skeleton), "the skeleton of the measured program (a path or a bundled example)")
      ("fit", po::value(&fit), "figures to fit, comma-separated: speed bandwidth latency s r o alpha, or all\n"
                               "(default: every figure the database does not give)")
      ("max-error", po::value(&max_error)->default_value(max_error), "fail when the fitted model misses a run by more (relative)")
      ("no-replay", po::bool_switch(&no_replay), "do not replay the runs on the fitted platform")
      ("output,o", po::value(&output)->required(), "calibrated platform file to write (atomically)");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;
  if (db.empty() && runs.empty()) throw UsageError("fit needs --db, --runs, or both");
  if (!runs.empty() && skeleton.empty()) throw UsageError("--runs needs --skeleton (the program the runs measured)");
  if (runs.empty() && !skeleton.empty()) throw UsageError("--skeleton without --runs: nothing to fit it to");
  if (!(max_error > 0)) throw UsageError("--max-error must be positive");
  const fs::path dir = fs::path(output).parent_path();
  if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");
  calibration::FitRequest req;
  try {
    req.base = calibration::read_base_platform(existing_data(platform, "platforms"));
    if (!fit.empty()) req.fit = calibration::parse_fit_params(fit);
  } catch (const calibration::FitInputError& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--fit: ") + e.what());
  }
  if (!db.empty()) {
    req.db = read_input(db);
    req.db_path = db;
  }
  if (!runs.empty()) {
    req.skeleton = load_skeleton_input(skeleton);
    req.skeleton_path = existing_data(skeleton, "skeletons/examples");
    req.runs = read_runs(runs, *req.skeleton);
  }
  req.replay_check = !no_replay;
  req.max_error = max_error;
  calibration::FitResult res;
  try {
    res = calibration::fit_platform(req, &err);
  } catch (const calibration::FitInputError& e) {
    throw UsageError(e.what());
  }
  out << calibration::format_fit_report(res, req.runs ? req.runs->param_columns : std::vector<std::string>{});
  calibration::write_file_atomically(output, calibration::calibrated_platform_xml(req, res));
  out << "wrote " << output << "\n";
  return EXIT_OK;
}

calibration::PatternTable read_table(const std::string& path) {
  try {
    return calibration::read_pattern_table(path);
  } catch (const calibration::PatternTableError& e) {
    throw UsageError(e.what());
  }
}

int cmd_table_runs(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkcalib table-runs");
  std::string table, machine, output;
  int P = 16, steps = 10;
  desc.add_options()("help,h", "this help")
      ("table", po::value(&table)->required(), "per-pattern lines, CSV machine,pattern,regime,rho_us,beta_us_per_byte (seed 001 table 2)")
      ("machine", po::value(&machine)->required(), "the table's machine whose lines to use (e.g. t3e)")
      ("np,P", po::value(&P)->default_value(P), "ranks of the runs (a 2-D pattern needs P >= 4 on a Px x Py grid)")
      ("steps", po::value(&steps)->default_value(steps), "pattern repetitions per run")
      ("output,o", po::value(&output)->required(), "runs CSV to write (for mkcalib fit --runs with --skeleton comm_patterns.json)");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;
  if (P < 4 || steps < 1) throw UsageError("-P must be >= 4 and --steps >= 1");
  calibration::MeasuredRuns runs;
  try {
    runs = calibration::pattern_runs(read_table(table), machine, P, steps);
  } catch (const calibration::PatternTableError& e) {
    throw UsageError(e.what());
  }
  calibration::write_file_atomically(output, calibration::format_runs_csv(runs));
  out << "wrote " << output << ": " << runs.runs.size() << " run(s)\n";
  return EXIT_OK;
}

int cmd_table_check(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkcalib table-check");
  std::string table, machine, platform;
  int P = 16, steps = 10;
  desc.add_options()("help,h", "this help")
      ("table", po::value(&table)->required(), "per-pattern lines (as for table-runs)")
      ("machine", po::value(&machine)->required(), "the table's machine whose lines to check")
      ("platform", po::value(&platform)->required(), "the platform file or a bundled name")
      ("np,P", po::value(&P)->default_value(P), "ranks")
      ("steps", po::value(&steps)->default_value(steps), "pattern repetitions per run");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;
  if (P < 4 || steps < 1) throw UsageError("-P must be >= 4 and --steps >= 1");
  const std::string platform_path = existing_data(platform, "platforms");
  skeletons::Skeleton sk;
  try {
    sk = skeletons::load_skeleton(existing_data("comm_patterns.json", "calibration/data"));
  } catch (const skeletons::SkeletonError& e) {
    throw UsageError(e.what());
  }
  std::vector<calibration::PatternCheck> rows;
  try {
    rows = calibration::check_pattern_table(platform_path, sk, read_table(table), machine, P, steps);
  } catch (const calibration::PatternTableError& e) {
    throw UsageError(e.what());
  } catch (const calibration::FitInputError& e) {
    throw UsageError(e.what());
  }
  out << "platform " << platform_path << ", table " << table << " (" << machine << "), P=" << P << ", steps=" << steps << "\n";
  out << calibration::format_pattern_check(rows);
  return EXIT_OK;
}

int cmd_patterns(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkcalib patterns");
  std::string platform, db, table, machine, output;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "base platform: a generated XML file or a bundled name (paragon, t3e, ipsc860)")
      ("db", po::value(&db), "mkcalib bench database with shift1d, halo2d or halo3d: per-message figures of the 1d, 2d, 3d patterns")
      ("table", po::value(&table), "per-pattern lines instead (as for table-runs: seed 001 table 2)")
      ("machine", po::value(&machine), "the table's machine whose lines to use (with --table)")
      ("output,o", po::value(&output)->required(), "platform file to write (atomically): the base with the patterns' props");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;
  if (db.empty() == table.empty()) throw UsageError("patterns needs --db or --table (one of them)");
  if (!table.empty() && machine.empty()) throw UsageError("--table needs --machine (whose lines to use)");
  const fs::path dir = fs::path(output).parent_path();
  if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");
  calibration::BasePlatform base;
  try {
    base = calibration::read_base_platform(existing_data(platform, "platforms"));
  } catch (const calibration::FitInputError& e) {
    throw UsageError(e.what());
  }
  std::vector<platforms::PatternFigures> figures;
  std::string from;
  if (!db.empty()) {
    const auto measured = calibration::measured_patterns(read_input(db));
    if (measured.empty()) throw UsageError(db + ": no pattern kernel measured (mkcalib bench --kernels patterns)");
    out << calibration::format_patterns(measured);
    for (const auto& m : measured)
      if (m.usable) figures.push_back(m.figures);
    if (figures.empty()) throw UsageError(db + ": no pattern kernel is usable (see above)");
    from = "mkcalib bench database " + fs::path(db).filename().string();
  } else {
    try {
      figures = calibration::table_patterns(read_table(table), machine, base.figures.eager_threshold_bytes.value);
    } catch (const calibration::PatternTableError& e) {
      throw UsageError(e.what());
    }
    for (const auto& f : figures) out << "  " << platforms::describe_pattern(f) << "\n";
    from = fs::path(table).filename().string() + " (machine " + machine + ")";
  }
  const double overheads = base.figures.send_overhead_s.value + base.figures.recv_overhead_s.value + base.figures.per_message_overhead_s.value;
  for (const auto& f : figures) {
    for (double v : {f.short_rho_s, f.short_beta_s_per_byte, f.long_rho_s, f.long_beta_s_per_byte})
      if (!(v >= 0)) throw UsageError("pattern " + f.name + " has a negative figure (" + platforms::describe_pattern(f) + "): remeasure");
    if (std::min(f.short_rho_s, f.long_rho_s) < overheads)
      throw UsageError("pattern " + f.name + ": its start-up (" + platforms::describe_pattern(f) + ") is below the base platform's s + r + o = " +
                       std::to_string(overheads * 1e6) + " us: calibrate s, r, o on the same machine first (mkcalib fit --db)");
  }
  platforms::PlatformSpec spec = base.spec;
  for (const auto& f : figures) {
    std::erase_if(spec.patterns, [&](const platforms::PatternFigures& p) { return p.name == f.name; });
    spec.patterns.push_back(f);
  }
  std::sort(spec.patterns.begin(), spec.patterns.end(), [](const auto& a, const auto& b) {
    return platforms::pattern_max_partners(a.name) < platforms::pattern_max_partners(b.name);
  });
  spec.notes.push_back("Per-pattern figures added by mkcalib patterns from " + from + " to the base platform " +
                       fs::path(base.path).filename().string() + ".");
  calibration::write_file_atomically(output, platforms::generate_platform_xml(spec));
  out << "wrote " << output << ": " << spec.patterns.size() << " pattern(s)\n";
  return EXIT_OK;
}

int cmd_validate(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkcalib validate");
  std::string platform, runs, skeleton;
  int noise_seeds = 0;
  desc.add_options()("help,h", "this help")
      ("platform", po::value(&platform)->required(), "the (calibrated) platform file or a bundled name")
      ("skeleton", po::value(&skeleton)->required(), "the skeleton of the measured program")
      ("runs", po::value(&runs)->required(), "held-out measured runs (CSV as for fit)")
      ("noise-seeds", po::value(&noise_seeds)->default_value(0),
       "also replay under this many draws of the OS noise calibrated to the platform's skew alpha (column replay+noise_s)");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;
  const std::string platform_path = existing_data(platform, "platforms");
  const skeletons::Skeleton sk = load_skeleton_input(skeleton);
  const calibration::MeasuredRuns mr = read_runs(runs, sk);
  std::vector<calibration::ValidationRow> rows;
  try {
    if (noise_seeds < 0) throw UsageError("--noise-seeds must be >= 0");
    rows = calibration::validate_platform(platform_path, sk, mr, noise_seeds);
  } catch (const calibration::FitInputError& e) {
    throw UsageError(e.what());
  }
  out << "platform " << platform_path << ", skeleton " << sk.name << ", runs " << runs << "\n";
  out << calibration::format_validation(rows, mr.param_columns);
  return EXIT_OK;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// mkcalib load: /proc samples of the cores the ranks will run on, written as a load file for mksim --load
// (calibration/load_probe.hpp; calibration/README.md "mkcalib load").
int cmd_load(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mkcalib load");
  double window = 10, interval = 0.2;
  bool autogroups = false;
  std::string cpus_text = "0", tasks_text = "1", demand = "cpu", rule = "speed", hosts_text, output, proc = "/proc", pids_text;
  desc.add_options()("help,h", "this help")
      ("window", po::value(&window)->default_value(window), "seconds to sample")
      ("interval", po::value(&interval)->default_value(interval), "seconds per sample (one profile piece; at least 2 ticks of /proc/stat, 0.02 s)")
      ("cpus", po::value(&cpus_text)->default_value(cpus_text), "cores to measure, e.g. 0,1 or 0-3: the k-th is rank k's core")
      ("tasks", po::value(&tasks_text)->default_value(tasks_text),
       "K, the CPU-bound background tasks that share a core with a rank while busy; auto: the mean runnable count\n"
       "per core seen in /proc/PID/task/TID/stat at each sample")
      ("demand", po::value(&demand)->default_value(demand), "cpu (busy time is the background's CPU time, stretched beside a rank: stress-ng, jobs with fixed work per cycle) or wall")
      ("rule", po::value(&rule)->default_value(rule), "speed: per-core profiles (speed HOST PROFILE); busy: the fitted busy rule (the other form is written as a comment)")
      ("pids", po::value(&pids_text), "measure only these processes and their descendants (comma-separated ids), not every task on the cores")
      ("autogroups", po::bool_switch(&autogroups),
       "weigh sessions as CFS does: the busy fraction is that of mkcalib's own session (autogroup, where the program\n"
       "will run); other sessions count by their nice weight against it")
      ("hosts", po::value(&hosts_text), "host of each core in the load file, comma-separated (default rank:0, rank:1, ...)")
      ("proc", po::value(&proc)->default_value(proc), "the proc file system")
      ("output,o", po::value(&output)->required(), "load file to write; profiles are written beside it as STEM.cpuN.prof");
  if (!parse_options(args, desc, {}, out)) return EXIT_OK;
  calibration::ProbeOptions o;
  try {
    o.cpus = calibration::parse_cpu_list(cpus_text);
    if (!pids_text.empty()) o.pids = calibration::parse_pid_list(pids_text);
    if (!o.pids.empty() && autogroups) throw UsageError("--pids and --autogroups: give one (processes, or sessions by weight)");
    o.autogroups = autogroups;
  } catch (const calibration::LoadProbeInputError& e) {
    throw UsageError(e.what());
  }
  if (!(window > 0) || !std::isfinite(window)) throw UsageError("--window must be a positive number of seconds, got " + num(window));
  if (!(interval >= 0.02) || !std::isfinite(interval))
    throw UsageError("--interval must be at least 0.02 s (/proc/stat counts in ticks of 0.01 s), got " + num(interval));
  if (interval > window) throw UsageError("--interval (" + num(interval) + " s) is longer than --window (" + num(window) + " s)");
  if (window / interval > 1e6) throw UsageError("--window / --interval: more than a million samples");
  double tasks = -1;
  if (tasks_text != "auto") {
    std::size_t used = 0;
    try {
      tasks = std::stod(tasks_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tasks_text.size() || !(tasks > 0) || !std::isfinite(tasks)) throw UsageError("--tasks: expected a positive number or auto, got \"" + tasks_text + "\"");
  }
  o.count_tasks = tasks < 0;
  if (demand != "cpu" && demand != "wall") throw UsageError("--demand: expected cpu or wall, got \"" + demand + "\"");
  if (rule != "speed" && rule != "busy") throw UsageError("--rule: expected speed or busy, got \"" + rule + "\"");
  std::vector<std::string> hosts;
  if (hosts_text.empty()) {
    for (std::size_t k = 0; k < o.cpus.size(); ++k) hosts.push_back("rank:" + std::to_string(k));
  } else {
    hosts = split_commas(hosts_text);
    if (hosts.size() != o.cpus.size())
      throw UsageError("--hosts names " + std::to_string(hosts.size()) + " host(s) for " + std::to_string(o.cpus.size()) + " cpu(s)");
    for (const auto& h : hosts)
      if (h.empty() || h.find_first_of(" \t#") != std::string::npos) throw UsageError("--hosts: \"" + h + "\" is not a host name");
  }
  o.window_s = window;
  o.interval_s = interval;
  o.proc = proc;
  const fs::path out_path(output);
  const fs::path dir = out_path.parent_path();
  if (!dir.empty() && !fs::is_directory(dir)) throw UsageError(output + ": directory " + dir.string() + " does not exist");

  calibration::Probe probe;
  try {
    probe = calibration::measure_load(o);
  } catch (const calibration::LoadProbeInputError& e) {
    throw UsageError(e.what());
  }  // ProcError: exit code 1 through run_guarded
  std::vector<calibration::CpuLoad> loads;
  std::vector<std::string> names;
  std::ostringstream cmd;
  cmd << "mkcalib load --window " << window << " --interval " << interval << " --cpus " << cpus_text << " --tasks " << tasks_text
      << " --demand " << demand << (pids_text.empty() ? "" : " --pids " + pids_text) << (autogroups ? " --autogroups" : "");
  for (const auto& s : probe.cpus) {
    loads.push_back(calibration::summarise_cpu(s, probe.interval_s, tasks, demand));
    const std::string name = out_path.stem().string() + ".cpu" + std::to_string(s.cpu) + ".prof";
    names.push_back(name);
    std::ostringstream comment;
    comment << "availability of a CPU-bound rank on cpu " << s.cpu << ", " << s.busy.size() << " samples of " << probe.interval_s
            << " s (" << cmd.str() << "), repeating";
    calibration::write_file_atomically((dir / name).string(), calibration::profile_text(loads.back(), probe.interval_s, comment.str()));
  }
  std::ostringstream header;
  header << cmd.str() << "\n"
         << "background load of this machine over " << std::setprecision(4) << probe.elapsed_s << " s; a rank on the k-th core gets\n"
         << "a = 1 - d' K/(1+K) of it in each sample, d' the busy fraction (demand=" << demand << "; calibration/README.md)";
  calibration::write_file_atomically(output, calibration::load_file_text(loads, hosts, names, rule, header.str()));
  out << "sampled cpu(s) " << cpus_text << " for " << std::setprecision(4) << probe.elapsed_s << " s, "
      << (probe.cpus.empty() ? 0 : probe.cpus[0].busy.size()) << " samples of " << probe.interval_s << " s\n";
  out << "cpu  busy_mean  busy_min  busy_max  tasks  availability  " << (autogroups ? "others  " : "") << "fitted rule\n";
  for (std::size_t k = 0; k < loads.size(); ++k) {
    const auto& l = loads[k];
    out << std::left << std::setw(5) << l.cpu << std::setw(11) << std::setprecision(3) << l.busy_mean << std::setw(10) << l.busy_min
        << std::setw(10) << l.busy_max << std::setw(7) << l.tasks << std::setw(14) << std::setprecision(4) << l.mean_availability;
    if (autogroups) out << std::setw(8) << std::setprecision(3) << l.others_loss;
    out << "busy " << hosts[k] << " duty=" << std::setprecision(4) << l.fitted.duty << " period=" << l.fitted.period << "\n"
        << std::right;
  }
  out << "wrote " << output << " (rule " << rule << ")";
  for (const auto& n : names) out << ", " << (dir / n).string();
  out << "\n";
  return EXIT_OK;
}

}  // namespace

int run_mkcalib(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_guarded("mkcalib", USAGE, err, [&]() -> int {
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
        out << "mkcalib " << MKSIM_VERSION << "\n";
        return EXIT_OK;
      }
      const std::vector<std::string> rest(args.begin() + 1, args.end());
      if (args[0] == "bench") return cmd_bench(rest, out, err);
      if (args[0] == "show") return cmd_show(rest, out);
      if (args[0] == "fit") return cmd_fit(rest, out, err);
      if (args[0] == "validate") return cmd_validate(rest, out);
      if (args[0] == "table-runs") return cmd_table_runs(rest, out);
      if (args[0] == "table-check") return cmd_table_check(rest, out);
      if (args[0] == "patterns") return cmd_patterns(rest, out);
      if (args[0] == "load") return cmd_load(rest, out);
      throw UsageError("unknown command \"" + args[0] + "\"\n" + USAGE);
    } catch (const calibration::FitError& e) {
      throw std::runtime_error(std::string("fit failed: ") + e.what());  // exit code 1
    } catch (const calibration::ResumeMismatch& e) {
      throw UsageError(e.what());
    }
  });
}

}  // namespace mksim::sim
