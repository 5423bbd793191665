// Text summary of one run: fixed format, classic locale, 6 significant digits, so golden tests can compare it.
#include "results/summary.hpp"

#include <algorithm>
#include <iomanip>
#include <locale>
#include <sstream>
#include <string>
#include <vector>

namespace mksim::results {
namespace {

constexpr std::size_t MAX_PHASE_LINES = 12;  // keeps the whole summary within 20 lines

std::string number(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << std::setprecision(6) << value;
  return out.str();
}

std::string share(double part, double total) {
  if (total <= 0) return "-";
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << std::fixed << std::setprecision(1) << 100.0 * part / total << '%';
  return out.str();
}

}  // namespace

std::string summarize(const RunResult& result) {
  double compute = 0, comm = 0, wait = 0;
  for (const RankTimes& rank : result.ranks) {
    compute += rank.compute_s;
    comm += rank.comm_s;
    wait += rank.wait_s;
  }
  const double total = compute + comm + wait;

  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << std::left;
  out << "predicted time    " << number(result.predicted_time_s) << " s\n";
  out << "critical rank     " << result.critical_rank << " of " << result.ranks.size() << " ranks\n";
  out << "messages          " << result.total_messages << '\n';
  out << std::setw(18) << "time over ranks" << std::setw(14) << "total_s" << "share\n";
  out << std::setw(18) << "  compute" << std::setw(14) << number(compute) << share(compute, total) << '\n';
  out << std::setw(18) << "  communication" << std::setw(14) << number(comm) << share(comm, total) << '\n';
  out << std::setw(18) << "  wait" << std::setw(14) << number(wait) << share(wait, total) << '\n';

  if (result.phases.empty()) {
    out << "phases            none\n";
    return out.str();
  }
  std::vector<const PhaseTotals*> phases;
  for (const PhaseTotals& phase : result.phases) phases.push_back(&phase);
  std::stable_sort(phases.begin(), phases.end(),
                   [](const PhaseTotals* a, const PhaseTotals* b) { return a->phase < b->phase; });
  const std::size_t shown = phases.size() <= MAX_PHASE_LINES ? phases.size() : MAX_PHASE_LINES - 1;
  out << std::setw(18) << "phase" << std::setw(14) << "compute_s" << std::setw(14) << "comm_s" << "wait_s\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const PhaseTotals& phase = *phases[i];
    out << "  " << std::setw(16) << (phase.phase.empty() ? "(none)" : phase.phase) << std::setw(14)
        << number(phase.compute_s) << std::setw(14) << number(phase.comm_s) << number(phase.wait_s) << '\n';
  }
  if (shown < phases.size()) out << "  ... " << phases.size() - shown << " more phases (see /phases in the HDF5 file)\n";
  return out.str();
}

}  // namespace mksim::results
