// Per-message pattern figures from a database.
#include "calibration/pattern_figures.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace mksim::calibration {
namespace {

/** @brief The pattern kernels: name, pattern, grid dimensions (0: a ring), messages one rank sends per operation. */
struct PatternKernel {
  const char* kernel;
  const char* pattern;
  int ndims;
  int messages;
};
constexpr PatternKernel KERNELS[] = {{"shift1d", "1d", 0, 1}, {"halo2d", "2d", 2, 4}, {"halo3d", "3d", 3, 6}};

int partners_at(const PatternKernel& k, int np) {
  if (k.ndims == 0) return np >= 3 ? 2 : np - 1;  // a ring: right and left, one rank at np = 2
  int n = 0;
  for (int d : dims_create(np, k.ndims)) n += d >= 3 ? 2 : d - 1;  // a side of 2 has one neighbour both ways
  return n;
}

}  // namespace

std::vector<int> dims_create(int np, int ndims) {
  std::vector<int> dims(static_cast<std::size_t>(std::max(ndims, 1)), 1);
  std::vector<int> primes;
  for (int n = std::max(np, 1), f = 2; n > 1;) {
    if (static_cast<long>(f) * f > n) {
      primes.push_back(n);
      break;
    }
    if (n % f == 0) {
      primes.push_back(f);
      n /= f;
    } else {
      ++f;
    }
  }
  // largest factors first, each onto the dimension with the smallest product so far (MPI's balanced choice)
  std::sort(primes.rbegin(), primes.rend());
  for (int p : primes) *std::min_element(dims.begin(), dims.end()) *= p;
  std::sort(dims.rbegin(), dims.rend());
  return dims;
}

std::vector<MeasuredPattern> measured_patterns(const results::CalibDb& db) {
  std::vector<MeasuredPattern> out;
  for (const PatternKernel& pk : KERNELS) {
    const auto it = std::find_if(db.kernels.begin(), db.kernels.end(), [&](const results::CalibKernel& k) { return k.name == pk.kernel; });
    if (it == db.kernels.end()) continue;
    MeasuredPattern m;
    m.kernel = pk.kernel;
    m.pattern = pk.pattern;
    m.partners = partners_at(pk, db.np);
    m.messages_per_op = pk.messages;
    // a ring is 1d from 2 ranks on; a halo is the pattern only when every neighbour is a distinct partner
    const bool pure = pk.ndims == 0 ? m.partners >= 1 : m.partners == 2 * pk.ndims;
    if (it->fit.empty()) {
      m.note = "not fitted (fewer than 2 sizes)";
    } else if (!pure) {
      const std::vector<int> dims = pk.ndims ? dims_create(db.np, pk.ndims) : std::vector<int>{db.np};
      std::string grid;
      for (int d : dims) grid += (grid.empty() ? "" : " x ") + std::to_string(d);
      m.note = "at np " + std::to_string(db.np) + " (" + grid + ") a rank has " + std::to_string(m.partners) +
               " distinct partner(s) for its " + std::to_string(pk.messages) + " messages, not the " + m.pattern +
               " halo (measure with at least 3 ranks per side: -np " + (pk.ndims == 2 ? "9" : "27") + ")";
    } else {
      m.usable = true;
    }
    if (!it->fit.empty()) {
      const results::CalibRegime& s = it->fit.front();
      const results::CalibRegime& l = it->fit.back();
      const double k = pk.messages;
      m.figures = {m.pattern, static_cast<double>(s.to_bytes), s.rho_s / k, s.beta_s_per_byte / k, l.rho_s / k, l.beta_s_per_byte / k,
                   "mkcalib bench database (machine " + db.machine + ", " + db.date_utc + ", np " + std::to_string(db.np) + "): " +
                       pk.kernel + " fit per operation / " + std::to_string(pk.messages) + " message(s) per rank"};
    }
    out.push_back(m);
  }
  return out;
}

std::string format_patterns(const std::vector<MeasuredPattern>& measured) {
  std::ostringstream o;
  for (const MeasuredPattern& m : measured) {
    o << "  " << m.kernel << " -> ";
    if (m.figures.name.empty()) o << m.pattern;
    else o << platforms::describe_pattern(m.figures);
    o << " (" << m.partners << " partner(s), " << m.messages_per_op << " message(s) per operation)";
    if (!m.usable) o << ": not used, " << m.note;
    o << "\n";
  }
  return o.str();
}

}  // namespace mksim::calibration
