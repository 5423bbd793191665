// `mksim report IN.h5 [MORE.h5 ...] -o report.html`: options parsed with Boost.Program_options, every error mapped
// to a message naming the file and an exit code; the page itself is built by mksim::results (report.hpp).
#include "sim/report_cli.hpp"

#include "results/report.hpp"
#include "sim/cli.hpp"

#include <boost/program_options.hpp>

#include <cstdlib>
#include <filesystem>

#ifndef MKSIM_VERSION
#define MKSIM_VERSION "0.0.0"
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace mksim::sim {
namespace {

const char* USAGE =
    "usage: mksim report IN.h5 [MORE.h5 ...] -o REPORT.html [--timeline FILE.csv ...] [--title TEXT] [--js-dir DIR]\n"
    "  inputs: sweep tables (mksim sweep -o), run results (mksim predict -o), calibration databases (mkcalib bench -o)\n"
    "  and timeline CSVs (mksim predict --timeline; also as inputs ending in .csv)\n";


std::string command_line(const std::vector<std::string>& args) {
  std::string text = "mksim report";
  for (const auto& a : args) text += " " + a;
  return text;
}

int run(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mksim report");
  std::string output, title, js_dir;
  std::vector<std::string> inputs, timelines;
  desc.add_options()("help,h", "this help")
      ("output,o", po::value(&output), "HTML page to write (atomically)")
      ("timeline", po::value(&timelines)->composing(), "a timeline CSV of mksim predict --timeline (repeatable)")
      ("title", po::value(&title)->default_value("mksim report"), "the page's title")
      ("js-dir", po::value(&js_dir),
       "node_modules directory with vega, vega-lite and vega-embed (default: $MKSIM_REPORT_JS_DIR, else the build's)")
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
  if (output.empty()) throw UsageError("report: give the page to write with -o REPORT.html");
  if (inputs.empty() && timelines.empty()) throw UsageError("report: give at least one input file");
  if (const fs::path dir = fs::path(output).parent_path(); !dir.empty() && !fs::is_directory(dir))
    throw UsageError(output + ": directory " + dir.string() + " does not exist");

  if (js_dir.empty()) {
    const char* env = std::getenv("MKSIM_REPORT_JS_DIR");
    js_dir = env && *env ? env : results::default_vega_dir();
  }
  results::ReportOptions options;
  options.inputs = inputs;
  options.timelines = timelines;
  options.title = title;
  options.tool = std::string("mksim ") + MKSIM_VERSION;
  options.command = command_line(args);
  const results::VegaLibrary library = results::load_vega_library(js_dir);
  const results::ReportPage page = results::build_report(options, library);
  results::write_report(output, page);
  out << "wrote " << output << ": " << page.plots << " plot(s) from " << inputs.size() + timelines.size()
      << " input(s)";
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
