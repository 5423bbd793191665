// Per-pattern communication figures (seed 001 s.5, table 2): T_comm = rho + beta*D per message of a
// communication pattern, in two regimes, "to reproduce the interference between the messages". Kept in a
// platform's root zone as mksim.pattern.<name>.* props (written by the generator, read by sim/engine); plain
// values here, no SimGrid.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mksim::platforms {

/** @brief The figures of one pattern: each message of a phase with this pattern costs rho + beta*D of its regime. */
struct PatternFigures {
  std::string name;                   ///< "1d", "2d" or "3d" (pattern_names())
  double breakpoint_bytes = 0;        ///< messages of more bytes take the long line
  double short_rho_s = 0;             ///< start-up per message, D <= breakpoint
  double short_beta_s_per_byte = 0;   ///< time per byte, D <= breakpoint
  double long_rho_s = 0;              ///< start-up per message, D > breakpoint
  double long_beta_s_per_byte = 0;    ///< time per byte, D > breakpoint
  std::string source;                 ///< where the figures come from (written as a comment)

  /** @brief True when a message of `bytes` takes the long line. */
  bool long_regime(double bytes) const { return bytes > breakpoint_bytes; }
  /** @brief rho + beta*D of the message's regime, seconds. */
  double message_s(double bytes) const;
  friend bool operator==(const PatternFigures&, const PatternFigures&) = default;
};

/** @brief The patterns, by how many distinct partners (ranks sent to or received from, itself excluded) one rank
 *  has in a phase: "1d" (a shift on a ring, <= 2), "2d" (a halo on a 2-D torus, <= 4), "3d" (<= 6). */
const std::vector<std::pair<std::string, int>>& pattern_names();

/** @brief The most partners of a pattern (2, 4, 6), or 0 for a name that is not one. */
int pattern_max_partners(const std::string& name);

/** @brief The pattern of a phase whose ranks have at most `partners` distinct partners: "1d" (1-2), "2d" (3-4),
 *  "3d" (5-6), "" (0 or more than 6). */
std::string pattern_for_partners(int partners);

/** @brief The props that hold `p` (id, value): mksim.pattern.<name>.breakpoint_bytes, .short_rho_s,
 *  .short_beta_s_per_byte, .long_rho_s, .long_beta_s_per_byte. */
std::vector<std::pair<std::string, std::string>> pattern_props(const PatternFigures& p);

/** @brief The patterns held by a root zone's props (sorted by their partner limit; none when no prop starts with
 *  mksim.pattern.). Throws std::runtime_error naming `where` and the prop: an unknown pattern or figure, a
 *  missing figure, a value that is not a non-negative number. */
std::vector<PatternFigures> patterns_from_props(const std::map<std::string, std::string>& props, const std::string& where);

/** @brief One line: "2d: short 40.3 us + 0.021 us/B, long 77.5 us + 0.0141 us/B, breakpoint 5391 B". */
std::string describe_pattern(const PatternFigures& p);

/** @brief Figures from two published lines (short and long), the breakpoint where the lines cross (the regime
 *  each size takes is then the cheaper one); when they do not cross at a positive size, the largest `fallback`. */
PatternFigures pattern_from_lines(const std::string& name, double short_rho_s, double short_beta_s_per_byte, double long_rho_s,
                                  double long_beta_s_per_byte, double fallback_breakpoint_bytes, const std::string& source);

}  // namespace mksim::platforms
