// Kernel names, groups and fit kinds.
#include "calibration/kernels.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace mksim::calibration {
namespace {

struct Info {
  Kernel kernel;
  const char* name;
  SizeList sizes;
  FitKind fit;
};

constexpr Info INFO[] = {
    {Kernel::PINGPONG, "pingpong", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::SEND_OVERHEAD, "send_overhead", SizeList::EAGER, FitKind::LINE},
    {Kernel::RECV_OVERHEAD, "recv_overhead", SizeList::EAGER, FitKind::LINE},
    {Kernel::STREAM, "stream", SizeList::EAGER, FitKind::LINE},
    {Kernel::SHIFT1D, "shift1d", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::HALO2D, "halo2d", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::HALO3D, "halo3d", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::BARRIER, "barrier", SizeList::NONE, FitKind::NONE},
    {Kernel::BCAST, "bcast", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::REDUCE, "reduce", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::ALLREDUCE, "allreduce", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::ALLGATHER, "allgather", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::ALLTOALL, "alltoall", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::GATHER, "gather", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::SCATTER, "scatter", SizeList::MESSAGE, FitKind::TWO_REGIMES},
    {Kernel::COMPUTE, "compute", SizeList::WORKING_SET, FitKind::NONE},
};

// INFO is indexed by the enum's value.
constexpr bool info_in_enum_order() {
  for (int i = 0; i < static_cast<int>(std::size(INFO)); ++i)
    if (static_cast<int>(INFO[i].kernel) != i) return false;
  return true;
}
static_assert(info_in_enum_order() && std::size(INFO) == static_cast<std::size_t>(Kernel::COMPUTE) + 1);

const Info& info(Kernel kernel) { return INFO[static_cast<int>(kernel)]; }

}  // namespace

const std::vector<Kernel>& all_kernels() {
  static const std::vector<Kernel> kernels = [] {
    std::vector<Kernel> k;
    for (const Info& i : INFO) k.push_back(i.kernel);
    return k;
  }();
  return kernels;
}

const char* kernel_name(Kernel kernel) { return info(kernel).name; }

std::optional<Kernel> kernel_from_name(std::string_view name) {
  for (const Info& i : INFO)
    if (name == i.name) return i.kernel;
  return std::nullopt;
}

SizeList size_list_of(Kernel kernel) { return info(kernel).sizes; }
FitKind fit_kind_of(Kernel kernel) { return info(kernel).fit; }

std::vector<Kernel> parse_kernel_list(const std::string& list) {
  using K = Kernel;
  const std::vector<std::pair<std::string, std::vector<Kernel>>> groups = {
      {"all", all_kernels()},
      {"p2p", {K::PINGPONG, K::SEND_OVERHEAD, K::RECV_OVERHEAD, K::STREAM}},
      {"overheads", {K::SEND_OVERHEAD, K::RECV_OVERHEAD, K::STREAM}},
      {"patterns", {K::SHIFT1D, K::HALO2D, K::HALO3D}},
      {"collectives", {K::BARRIER, K::BCAST, K::REDUCE, K::ALLREDUCE, K::ALLGATHER, K::ALLTOALL, K::GATHER, K::SCATTER}},
  };
  std::vector<bool> chosen(all_kernels().size(), false);
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool known = false;
    if (const auto k = kernel_from_name(item)) {
      chosen[static_cast<int>(*k)] = known = true;
    }
    for (const auto& [name, members] : groups)
      if (item == name) {
        for (Kernel k : members) chosen[static_cast<int>(k)] = true;
        known = true;
      }
    if (!known) {
      std::string valid = "all, p2p, overheads, patterns, collectives";
      for (const Info& i : INFO) valid += std::string(", ") + i.name;
      throw std::invalid_argument("unknown kernel \"" + item + "\" (valid: " + valid + ")");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<Kernel> out;
  for (Kernel k : all_kernels())
    if (chosen[static_cast<int>(k)]) out.push_back(k);
  return out;
}

}  // namespace mksim::calibration
