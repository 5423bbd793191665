// Per-message figures of the communication patterns (seed 001 s.5, table 2: rho + beta*D per message of a
// pattern and regime), from what `mkcalib bench` measured (shift1d, halo2d, halo3d), for a platform's
// mksim.pattern.* props (`mkcalib patterns`; a published table's lines: pattern_table.hpp, table_patterns).
// Which pattern a measurement stands for is decided as for a program's phases (sim/engine/phase_patterns.hpp):
// a halo measured where a grid side has 2 ranks or fewer (halo2d on 4 ranks is a 2 x 2 torus: 2 partners, each
// reached in both directions) is not the 2-d halo; halo2d needs a grid of at least 3 x 3 ranks, halo3d 3 x 3 x 3.
#pragma once

#include "platforms/patterns.hpp"
#include "results/calib_db.hpp"

#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief MPI_Dims_create's balanced factorisation of np over ndims dimensions (non-increasing). */
std::vector<int> dims_create(int np, int ndims);

/** @brief What one pattern kernel of a database stands for. */
struct MeasuredPattern {
  std::string kernel;          ///< shift1d, halo2d, halo3d
  std::string pattern;         ///< the kernel's pattern: 1d, 2d, 3d
  int partners = 0;            ///< distinct partners of one rank at the database's np
  int messages_per_op = 0;     ///< messages one rank sends per operation timed (1, 4, 6)
  bool usable = false;         ///< every neighbour a distinct partner (a halo) or a ring (else `note` says why not)
  std::string note;
  platforms::PatternFigures figures;  ///< per message: the kernel's fit divided by messages_per_op
};

/** @brief The pattern kernels of `db` (those measured and fitted), in kernel order. */
std::vector<MeasuredPattern> measured_patterns(const results::CalibDb& db);

/** @brief The text of `mkcalib show`'s pattern section and `mkcalib patterns`: one line per pattern. */
std::string format_patterns(const std::vector<MeasuredPattern>& measured);

}  // namespace mksim::calibration
