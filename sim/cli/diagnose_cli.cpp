// `mksim diagnose SKELETON --platform X --P N [--param ...] [-o diag.h5]`: options, then sim/diagnosis/diagnose.hpp.
#include "sim/cli/diagnose_cli.hpp"

#include "results/diagnosis.hpp"
#include "sim/cli/common.hpp"
#include "sim/diagnosis/diagnose.hpp"
#include "sim/diagnosis/trace_diagnose.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <boost/program_options.hpp>

#include <cstdlib>
#include <filesystem>

namespace mksim::sim {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

constexpr const char* USAGE =
    "usage: mksim diagnose SKELETON --platform X --P N [--param NAME=VALUE ...] [-o diag.h5]\n"
    "       mksim diagnose TRACE_DIR | RANK_FILES... [--platform X] [-o diag.h5]\n"
    "Finds performance problems of the skeleton simulated at P, or of a run traced by mktrace, and ranks them\n"
    "by the time fixing them saves (measured on the trace, and by replaying the fixed program where possible;\n"
    "with a trace and --platform, the skeleton built from the trace is replayed at the trace's P; docs/diagnose.md).\n";

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mksim diagnose");
  std::string platform, output;
  std::vector<std::string> inputs;
  double tiny_bytes = 1024;
  int P = 0;
  unsigned long long seed = 1;
  std::vector<std::string> params;
  DiagnoseOptions o;
  bool no_model = false, quiet = false;
  desc.add_options()("help,h", "this help")
      ("skeleton", po::value(&inputs)->composing(), "skeleton JSON, mktrace run directory or rank files (positional)")
      ("platform", po::value(&platform), "SimGrid platform XML (or a bundled name: paragon, t3e, ipsc860); optional for a trace")
      ("P", po::value(&P), "number of MPI ranks to simulate (a trace: its own P)")
      ("tiny-bytes", po::value(&tiny_bytes)->default_value(1024.0), "trace: messages of at most this size are candidates for aggregation")
      ("param", po::value(&params)->composing(), "parameter value NAME=VALUE (repeatable, or comma-separated)")
      ("seed", po::value(&seed)->default_value(1), "seed of the per-rank random generators")
      ("output,o", po::value(&output), "write the diagnosis to this HDF5 file (atomically)")
      ("threshold", po::value(&o.threshold_pct)->default_value(5.0), "gain (% of the run) above which a problem is reported")
      ("screen", po::value(&o.screen_pct)->default_value(1.0), "candidates estimated below this % are not simulated")
      ("scale-factor", po::value(&o.scale_factor)->default_value(4), "scaling detector: model at P and at this many times P")
      ("max-what-ifs", po::value(&o.max_what_ifs)->default_value(32), "at most this many what-if replays")
      ("no-model", po::bool_switch(&no_model), "skip the analytic model (pipeline-grain and scaling detectors)")
      ("quiet,q", po::bool_switch(&quiet), "do not report each what-if replay on stderr");
  po::positional_options_description pos;
  pos.add("skeleton", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    out << USAGE << desc;
    return 0;
  }
  po::notify(vm);
  if (inputs.empty()) throw UsageError("no skeleton or trace given");
  auto set_platform = [&] {
    o.run.platform_path = resolve_data(platform, "platforms");
    if (!fs::exists(o.run.platform_path)) throw UsageError(platform + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  };
  o.run.seed = seed;
  o.use_model = !no_model;
  o.progress = quiet ? nullptr : &err;
  std::vector<std::string> resolved = inputs;
  if (resolved.size() == 1 && !fs::exists(resolved[0])) resolved[0] = resolve_data(resolved[0], "skeletons/examples");
  DiagnoseInput kind{};
  try {
    kind = classify_diagnose_input(resolved);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  if (kind != DiagnoseInput::SKELETON) {
    const trace::Run run = read_diagnose_trace(resolved, kind);
    if (vm.count("P") && P != run.P) throw UsageError("--P " + std::to_string(P) + ": the trace has P = " + std::to_string(run.P));
    if (!params.empty()) throw UsageError("--param: a trace has its own parameters (run.json)");
    TraceDiagnoseOptions t;
    t.threshold_pct = o.threshold_pct;
    t.screen_pct = o.screen_pct;
    t.tiny_bytes = tiny_bytes;
    t.progress = o.progress;
    if (!platform.empty()) {
      set_platform();
      t.simulate = o;
    }
    const results::Diagnosis d = diagnose_trace(run, t);
    out << format_trace_diagnosis(d);
    if (!output.empty()) {
      results::write_diagnosis_hdf5(output, d);
      out << "wrote " << output << "\n";
    }
    return 0;
  }
  if (platform.empty()) throw UsageError("--platform is required for a skeleton");
  if (P < 1) throw UsageError("--P must be at least 1 (required for a skeleton)");
  set_platform();
  o.run.P = P;
  o.run.params = parse_params(params);
  const skeletons::Skeleton sk = skeletons::load_skeleton(resolved.front());
  const results::Diagnosis d = diagnose(sk, o);
  out << format_diagnosis(d);
  if (!output.empty()) {
    results::write_diagnosis_hdf5(output, d);
    out << "wrote " << output << "\n";
  }
  return 0;
}

}  // namespace

int cmd_diagnose(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_guarded("mksim diagnose", USAGE, err, [&] { return run(args, out, err); });
}

}  // namespace mksim::sim
