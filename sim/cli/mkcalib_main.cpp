// mkcalib entry point: microbenchmarks -> communication database; everything happens in run_mkcalib so tests
// can call it.
#include "sim/cli/calib_cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  return mksim::sim::run_mkcalib(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
