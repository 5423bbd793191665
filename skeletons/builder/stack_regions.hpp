// ROUTINE nodes of programs without mktrace.h annotations, from the call-site stacks the tracer records
// (skeletons/builder/README.md, "Regions from call-site stacks").
#pragma once

#include "skeletons/trace/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief The functions of one ELF file (its .symtab, else .dynsym), looked up by offset in the loaded
 *  module as the tracer records frames (address - dladdr's dli_fbase). */
class ElfFunctions {
 public:
  /** @brief Reads `path`; `ok()` is false when it is not a readable 64-bit little-endian ELF file. */
  explicit ElfFunctions(const std::string& path);
  bool ok() const { return ok_; }
  /** @brief The (demangled, without GCC's `.constprop.0`-style suffix) name of the function that
   *  contains the return address at `offset`, or "" when no function symbol covers it. */
  std::string function_at(std::uint64_t offset) const;

 private:
  struct Sym {
    std::uint64_t lo = 0, hi = 0;
    std::string name;
  };
  std::vector<Sym> syms_;  // sorted by lo
  std::uint64_t base_ = 0;  // vaddr of the first PT_LOAD page: what dli_fbase points at
  bool ok_ = false;
};

/** @brief What `add_stack_regions` did to one run. */
struct StackRegionReport {
  std::size_t regions = 0;                 ///< region invocations added, all ranks
  std::vector<std::string> by_address;     ///< routines named by address (no symbol found), one per name
  std::string module_file;                 ///< the executable whose symbols named them ("" when none)
};

/** @brief Adds REGION_BEGIN/END records (names appended to each rank's `names`) around each invocation
 *  of a routine seen in the call-site stacks: consecutive MPI calls whose innermost program frame lies
 *  in the same function, called from the same return address, are one invocation, until that function's
 *  first call site repeats (a new call). Calls from `main`, from modules whose file is not the run's
 *  executable (run.json `executable`, else command[0]), and runs without stacks get none; annotation
 *  records close an open region. Nothing changes when the executable cannot be read. */
StackRegionReport add_stack_regions(trace::Run& run);

}  // namespace mksim::skeletons::builder
