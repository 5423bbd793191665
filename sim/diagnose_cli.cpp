// `mksim diagnose SKELETON --platform X --P N [--param ...] [-o diag.h5]`: options, then sim/diagnose.hpp.
#include "sim/diagnose_cli.hpp"

#include "results/diagnosis.hpp"
#include "sim/cli.hpp"
#include "sim/diagnose.hpp"
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
    "Finds performance problems of the skeleton simulated at P and ranks them by the time fixing them saves\n"
    "(measured by replaying the fixed program where possible; docs/diagnose.md).\n";

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mksim diagnose");
  std::string platform, skeleton, output;
  int P = 0;
  unsigned long long seed = 1;
  std::vector<std::string> params;
  DiagnoseOptions o;
  bool no_model = false, quiet = false;
  desc.add_options()("help,h", "this help")
      ("skeleton", po::value(&skeleton), "skeleton JSON (or the first positional argument)")
      ("platform", po::value(&platform)->required(), "SimGrid platform XML (or a bundled name: paragon, t3e, ipsc860)")
      ("P", po::value(&P)->required(), "number of MPI ranks to simulate")
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
  pos.add("skeleton", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    out << USAGE << desc;
    return 0;
  }
  po::notify(vm);
  if (skeleton.empty()) throw UsageError("no skeleton given");
  if (P < 1) throw UsageError("--P must be at least 1");
  o.run.platform_path = resolve_data(platform, "platforms");
  if (!fs::exists(o.run.platform_path)) throw UsageError(platform + ": no such platform file (bundled: ipsc860, paragon, t3e)");
  o.run.P = P;
  o.run.params = parse_params(params);
  o.run.seed = seed;
  o.use_model = !no_model;
  o.progress = quiet ? nullptr : &err;
  const skeletons::Skeleton sk = skeletons::load_skeleton(resolve_data(skeleton, "skeletons/examples"));
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
