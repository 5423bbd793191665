// mksim entry point: everything happens in run_cli so tests can call it.
#include "sim/cli/cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  return mksim::sim::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
