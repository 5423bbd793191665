// `mksim report IN.h5 [MORE.h5 ...] -o report.html`: options parsed with Boost.Program_options, every error mapped
// to a message naming the file and an exit code; the page itself is built by mksim::results (report.hpp).
#include "sim/cli/report_cli.hpp"

#include "calibration/measured_runs.hpp"
#include "results/report.hpp"
#include "results/sweep_table.hpp"
#include "results/timeline_export.hpp"
#include "sim/cli/common.hpp"
#include "sim/engine/collective_table.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "skeletons/skeleton_io.hpp"

#include <nlohmann/json.hpp>

#include <boost/program_options.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#ifndef MKSIM_VERSION
#define MKSIM_VERSION "0.0.0"
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace mksim::sim {
namespace {

const char* USAGE =
    "usage: mksim report IN.h5 [MORE.h5 ...] -o REPORT.html [--timeline FILE.csv ...] [--measured RUNS.csv ...]\n"
    "                    [--work-param N] [--work-exponent 2] [--paje OUT.paje] [--title TEXT] [--js-dir DIR] [--explore]\n"
    "  inputs: sweep tables (mksim sweep -o), run results (mksim predict -o), diagnoses (mksim diagnose -o),\n"
    "  calibration databases (mkcalib bench -o), timeline CSVs (mksim predict --timeline) and measured-runs CSVs\n"
    "  (mkcalib fit --runs); a .csv input is told by its header\n";

const std::string TIMELINE_HEADER = "rank,start_s,end_s,kind,block";

/** @brief What a .csv input is, by its first line that is not blank or a '#' comment. */
enum class CsvKind { TIMELINE, MEASURED };

CsvKind csv_kind(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (line == TIMELINE_HEADER) return CsvKind::TIMELINE;
    bool has_p = false, has_time = false;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = line.find(',', start);
      std::string field = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      while (!field.empty() && field.front() == ' ') field.erase(field.begin());
      while (!field.empty() && field.back() == ' ') field.pop_back();
      has_p = has_p || field == "P";
      has_time = has_time || field == "time_s";
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (has_p && has_time) return CsvKind::MEASURED;
    throw UsageError(path + ": line " + std::to_string(number) + ": a CSV this report does not know: expected a "
                     "timeline (header '" + TIMELINE_HEADER + "') or measured runs (a header with P and time_s)");
  }
  throw UsageError(path + ": an empty CSV (no header line)");
}

results::MeasuredRuns measured_runs(const std::string& path) {
  const calibration::MeasuredRuns parsed = calibration::read_measured_runs(path);
  results::MeasuredRuns runs;
  runs.file = path;
  runs.columns = parsed.param_columns;
  runs.comments = parsed.comments;
  for (const calibration::MeasuredRun& r : parsed.runs) runs.rows.push_back({r.P, r.params, r.time_s, r.line});
  return runs;
}


std::string attribute(const results::SweepTable& t, const std::string& key) {
  for (const auto& [k, v] : t.attributes)
    if (k == key) return v;
  return "";
}

/** @brief A control's range around the values a sweep ran (the field next to the slider takes any value). */
results::ExplorerParam control(const std::string& name, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  results::ExplorerParam p;
  p.name = name;
  p.value = values[(values.size() - 1) / 2];
  bool integers = true;
  for (double v : values) integers = integers && v == std::floor(v);
  const double lo = values.front(), hi = values.back();
  if (lo > 0) {
    p.lo = lo / 2;
    p.hi = hi * 2;
  } else {
    p.lo = lo - (hi - lo + 1);
    p.hi = hi + (hi - lo + 1);
  }
  if (integers) {
    p.lo = std::floor(p.lo);
    p.hi = std::ceil(p.hi);
    p.step = 1;
  }
  return p;
}

/** @brief The model explorers of the sweep tables among `files` (--explore): for each platform of each sweep, its
 *  skeleton's model derived at every P the sweep ran (in a child process per platform: SimGrid loads the platform
 *  once per process) and compiled to JavaScript. Files that are not sweep tables are left to the report. */
std::vector<results::ModelExplorer> explorers_of(const std::vector<std::string>& files, std::ostream& out) {
  std::vector<results::ModelExplorer> all;
  for (const std::string& file : files) {
    results::SweepTable table;
    try {
      table = results::read_sweep_hdf5(file);
    } catch (const std::exception&) {
      continue;  // not a sweep table (or unreadable): the report says so
    }
    const std::string skeleton_path = resolve_data(attribute(table, "skeleton"), "skeletons/examples");
    if (!fs::is_regular_file(skeleton_path))
      throw UsageError(file + ": --explore needs the sweep's skeleton, " + skeleton_path +
                       ", which is not there (run the report from the directory the sweep ran in)");
    const skeletons::Skeleton sk = skeletons::load_skeleton(skeleton_path);
    if (const std::string h = attribute(table, "skeleton.hash"); !h.empty() && h != skeletons::hash_hex(sk.hash))
      throw UsageError(file + ": the sweep ran skeleton " + skeleton_path + " with hash " + h + ", but the file now has hash " +
                       skeletons::hash_hex(sk.hash) + ": the model would not be the one swept");
    std::shared_ptr<const CollectiveTable> collectives;
    if (const std::string dbs = attribute(table, "collectives.databases"); !dbs.empty()) {
      std::vector<std::string> paths;
      for (std::size_t at = 0; at <= dbs.size();) {
        const std::size_t comma = std::min(dbs.find(',', at), dbs.size());
        paths.push_back(dbs.substr(at, comma - at));
        at = comma + 1;
      }
      collectives = std::make_shared<CollectiveTable>(load_collective_table(paths));
    }
    // controls: each parameter over the values swept, else around its default
    std::vector<results::ExplorerParam> params;
    const std::vector<double> defaults = skeletons::bind_parameters(sk, 1, {});
    for (const auto& p : sk.params) {
      std::vector<double> values;
      const auto col = std::find(table.param_names.begin(), table.param_names.end(), p.name);
      for (const auto& row : table.rows)
        if (col != table.param_names.end()) values.push_back(row.params.at(static_cast<std::size_t>(col - table.param_names.begin())));
      if (values.empty()) values.push_back(defaults.at(static_cast<std::size_t>(sk.symbols.find(p.name))));
      params.push_back(control(p.name, values));
    }
    std::map<std::string, double> point;
    for (const auto& p : params) point[p.name] = p.value;
    std::map<std::string, std::set<int>> Ps;
    for (const auto& row : table.rows) Ps[row.platform].insert(row.P);
    for (const auto& [platform, ranks] : Ps) {
      const std::string platform_path = resolve_data(platform, "platforms");
      const ChildResult child = run_in_child(
          [&] {
            const MachineModel machine = load_machine_model(platform_path, *ranks.rbegin());
            nlohmann::json models = nlohmann::json::array();
            for (int P : ranks) {
              ModelOptions mo;
              mo.P = P;
              mo.params = point;
              mo.skew = attribute(table, "skew") != "0";
              mo.collectives = collectives;
              const AnalyticModel model = derive_model(sk, machine, mo);
              const ModelScript script = model_script(model);
              nlohmann::json m = {{"P", P}, {"T", script.T_js}, {"classes", nlohmann::json::array()}};
              for (const auto& c : script.classes) {
                nlohmann::json k = {{"members", c.members}, {"total", c.total_js}, {"terms", nlohmann::json::array()}};
                for (const auto& t : c.terms) k["terms"].push_back({t.phase, t.kind, t.js});
                m["classes"].push_back(std::move(k));
              }
              m["notes"] = model.notes;
              models.push_back(std::move(m));
            }
            return models.dump();
          },
          [](const std::exception&) { return 1; }, "mksim report --explore: " + platform_path);
      if (child.code != 0) throw std::runtime_error(file + ": the model of " + skeleton_path + " on " + platform + ": " + child.output);
      results::ModelExplorer ex;
      ex.source = sk.name;
      ex.sweep = file;
      ex.platform = platform;
      ex.params = params;
      std::vector<std::string> notes;  // by P, as the models come
      for (const auto& m : nlohmann::json::parse(child.output)) {
        results::ExplorerModel em;
        em.P = m.at("P").get<int>();
        em.T_js = m.at("T").get<std::string>();
        for (const auto& k : m.at("classes")) {
          results::ExplorerClass c;
          c.members = k.at("members").get<std::string>();
          c.total_js = k.at("total").get<std::string>();
          for (const auto& t : k.at("terms")) c.terms.push_back({t.at(0).get<std::string>(), t.at(1).get<std::string>(), t.at(2).get<std::string>()});
          em.classes.push_back(std::move(c));
        }
        for (const auto& n : m.at("notes")) notes.push_back("at P = " + std::to_string(em.P) + ": " + n.get<std::string>());
        ex.models.push_back(std::move(em));
      }
      ex.notes = std::move(notes);
      out << "explore: " << sk.name << " on " << platform << ": model at " << ex.models.size() << " P, " << params.size()
          << " control(s)\n";
      all.push_back(std::move(ex));
    }
  }
  if (all.empty()) throw UsageError("report: --explore needs a sweep table among the inputs (mksim sweep -o)");
  return all;
}

std::string command_line(const std::vector<std::string>& args) {
  std::string text = "mksim report";
  for (const auto& a : args) text += " " + a;
  return text;
}

int run(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim report");
  std::string output, title, js_dir, paje, work_param;
  double work_exponent = 1;
  bool explore = false;
  std::vector<std::string> inputs, timelines, measured;
  desc.add_options()("help,h", "this help")
      ("output,o", po::value(&output), "HTML page to write (atomically)")
      ("timeline", po::value(&timelines)->composing(), "a timeline CSV of mksim predict --timeline (repeatable)")
      ("measured", po::value(&measured)->composing(),
       "measured runs CSV (P, parameters, time_s; mkcalib fit --runs format) to draw over the sweeps (repeatable)")
      ("work-param", po::value(&work_param),
       "the problem-size parameter of the isospeed and constant-time curves (default: N when swept)")
      ("work-exponent", po::value(&work_exponent)->default_value(1),
       "work W = PARAM^EXPONENT (2 for an N x N grid)")
      ("paje", po::value(&paje), "also write the timeline (exactly one given) as a Paje trace (ViTE, pj_dump)")
      ("title", po::value(&title)->default_value("mksim report"), "the page's title")
      ("js-dir", po::value(&js_dir),
       "node_modules directory with vega, vega-lite and vega-embed (default: $MKSIM_REPORT_JS_DIR, else the build's)")
      ("explore", po::bool_switch(&explore),
       "add a model explorer per sweep table and platform: the closed-form model at every swept P, with a control for P "
       "and every parameter, redrawn in the page as they move")
      ("input", po::value(&inputs)->composing(), "input files (positional)");
  po::positional_options_description positional;
  positional.add("input", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
  if (vm.count("help")) {
    out << USAGE << desc;
    return EXIT_OK;
  }
  po::notify(vm);
  if (output.empty() && paje.empty()) throw UsageError("report: give the page to write with -o REPORT.html");
  if (inputs.empty() && timelines.empty() && measured.empty()) throw UsageError("report: give at least one input file");
  for (const std::string* path : {&output, &paje})
    if (const fs::path dir = fs::path(*path).parent_path(); !path->empty() && !dir.empty() && !fs::is_directory(dir))
      throw UsageError(*path + ": directory " + dir.string() + " does not exist");
  if (!(work_exponent > 0) || !std::isfinite(work_exponent))
    throw UsageError("report: --work-exponent must be a positive number");
  // A .csv input is a timeline or measured runs, told by its header.
  std::vector<std::string> files;
  for (const std::string& path : inputs) {
    const bool csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
    if (!csv || !fs::is_regular_file(path)) files.push_back(path);  // the report names a missing file
    else if (csv_kind(path) == CsvKind::TIMELINE) timelines.push_back(path);
    else measured.push_back(path);
  }
  std::vector<results::MeasuredRuns> runs;
  for (const std::string& path : measured) {
    if (!fs::is_regular_file(path)) throw UsageError(path + ": no such file");
    try {
      runs.push_back(measured_runs(path));
    } catch (const calibration::RunsError& e) {
      throw UsageError(e.what());
    }
  }

  if (!paje.empty()) {
    if (timelines.size() != 1)
      throw UsageError("report: --paje exports one timeline; " + std::to_string(timelines.size()) + " given");
    results::Timeline timeline;
    try {
      timeline = results::read_timeline_csv(timelines.front(), std::numeric_limits<std::size_t>::max());
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    const results::PajeExport exported = results::write_paje(paje, timeline, timelines.front());
    out << "wrote " << paje << ": Paje trace of " << timelines.front() << ", " << exported.states << " state(s) on "
        << exported.containers - 1 << " rank container(s)";
    if (exported.clamped > 0) out << " (" << exported.clamped << " overlapping operation(s) cut to nest)";
    out << "\n";
    if (output.empty()) return EXIT_OK;
  }

  if (js_dir.empty()) {
    const char* env = std::getenv("MKSIM_REPORT_JS_DIR");
    js_dir = env && *env ? env : results::default_vega_dir();
  }
  results::ReportOptions options;
  options.inputs = files;
  options.timelines = timelines;
  options.measured = std::move(runs);
  options.work = {work_param, work_exponent};
  options.title = title;
  options.tool = std::string("mksim ") + MKSIM_VERSION;
  options.command = command_line(args);
  const results::VegaLibrary library = results::load_vega_library(js_dir);
  if (explore) options.explorers = explorers_of(files, out);
  const results::ReportPage page = results::build_report(options, library);
  results::write_report(output, page);
  out << "wrote " << output << ": " << page.plots << " plot(s) from "
      << options.inputs.size() + options.timelines.size() + options.measured.size() << " input(s)";
  if (!page.missing.empty()) out << "; " << page.missing.size() << " note(s) on what is missing";
  out << "\n";
  for (const auto& m : page.missing) out << "  missing: " << m << "\n";
  return EXIT_OK;
}

}  // namespace

int cmd_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_guarded("mksim", USAGE, err, [&]() -> int {
    try {
      return run(args, out);
    } catch (const results::ReportInputError& e) {
      throw UsageError(e.what());
    }
  });
}

}  // namespace mksim::sim
