// mkskel entry point: traces -> skeletons; everything happens in run_mkskel so tests can call it.
#include "sim/cli/cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  return mksim::sim::run_mkskel(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
