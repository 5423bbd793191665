#include "skeletons/builder/stack_regions.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

namespace mksim::skeletons::builder {

namespace fs = std::filesystem;

namespace {

template <class T>
bool read_at(const std::vector<char>& bytes, std::uint64_t off, T& out) {
  if (off > bytes.size() || bytes.size() - off < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + off, sizeof(T));
  return true;
}

std::string clean_name(std::string name) {
  if (name.rfind("_Z", 0) == 0) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    if (status == 0 && d) return d.get();
  }
  if (const auto dot = name.find('.'); dot != std::string::npos && dot > 0) name.resize(dot);  // exchange.constprop.0
  return name;
}

}  // namespace

ElfFunctions::ElfFunctions(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  const std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh{};
  if (!read_at(b, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr))
    return;
  bool have_load = false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (!read_at(b, eh.e_phoff + std::uint64_t{i} * eh.e_phentsize, ph)) return;
    if (ph.p_type == PT_LOAD && (!have_load || ph.p_vaddr < base_)) base_ = ph.p_vaddr, have_load = true;
  }
  base_ &= ~std::uint64_t{0xfff};
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (unsigned i = 0; i < eh.e_shnum; ++i)
    if (!read_at(b, eh.e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr), sh[i])) return;
  for (const std::uint32_t want : {std::uint32_t{SHT_SYMTAB}, std::uint32_t{SHT_DYNSYM}}) {
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_type != want || s.sh_link >= sh.size() || s.sh_entsize != sizeof(Elf64_Sym)) continue;
      const Elf64_Shdr& str = sh[s.sh_link];
      for (std::uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Sym); ++k) {
        Elf64_Sym sym{};
        if (!read_at(b, s.sh_offset + k * sizeof(Elf64_Sym), sym)) break;
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        if (sym.st_name >= str.sh_size || str.sh_offset + sym.st_name >= b.size()) continue;
        const char* p = b.data() + str.sh_offset + sym.st_name;
        const std::size_t n = strnlen(p, b.size() - (str.sh_offset + sym.st_name));
        syms_.push_back({sym.st_value, sym.st_value + std::max<std::uint64_t>(sym.st_size, 1), clean_name(std::string(p, n))});
      }
    }
    if (!syms_.empty()) break;
  }
  std::sort(syms_.begin(), syms_.end(), [](const Sym& x, const Sym& y) { return x.lo != y.lo ? x.lo < y.lo : x.name < y.name; });
  ok_ = true;
}

std::string ElfFunctions::function_at(std::uint64_t offset) const {
  if (offset == 0) return "";
  const std::uint64_t v = offset + base_ - 1;  // a return address points after its call instruction
  auto it = std::upper_bound(syms_.begin(), syms_.end(), v, [](std::uint64_t x, const Sym& s) { return x < s.lo; });
  while (it != syms_.begin()) {
    --it;
    if (v < it->hi) return it->name;
    if (it->lo + (1u << 20) < v) break;  // symbols that far below cannot cover it
  }
  return "";
}

namespace {

bool mpi_library(const std::string& module) {
  return module.rfind("libmpi", 0) == 0 || module.rfind("libpmpi", 0) == 0 || module.rfind("libmktrace", 0) == 0;
}

// The executable file of a run whose basename is `module`, or "".
std::string executable_file(const trace::Run& run, const std::string& module) {
  std::vector<std::string> candidates;
  if (module.find('/') != std::string::npos) candidates.push_back(module);  // the path dladdr gave, if still there
  if (!run.executable.empty()) candidates.push_back(run.executable);
  if (!run.command.empty()) {
    const std::string& c = run.command.front();
    candidates.push_back(c);
    if (c.find('/') == std::string::npos)
      if (const char* path = std::getenv("PATH")) {
        std::stringstream ss(path);
        for (std::string d; std::getline(ss, d, ':');)
          if (!d.empty()) candidates.push_back((fs::path(d) / c).string());
      }
  }
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::path(c).filename() == fs::path(module).filename() && fs::is_regular_file(c, ec)) return c;
  }
  return "";
}

std::string hex(std::uint64_t x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
  return buf;
}

struct Routine {
  std::string name;
  std::uint64_t caller = 0;  // hash of the return address into the caller: one call line
};

}  // namespace

StackRegionReport add_stack_regions(trace::Run& run) {
  StackRegionReport report;
  std::map<std::string, std::optional<ElfFunctions>> elves;  // module basename -> its file's functions
  std::set<std::string> by_address;
  const auto functions = [&](const std::string& module) -> const ElfFunctions* {
    auto it = elves.find(module);
    if (it == elves.end()) {
      const std::string file = executable_file(run, module);
      std::optional<ElfFunctions> f;
      if (!file.empty()) {
        f.emplace(file);
        if (!f->ok()) f.reset();
        else report.module_file = file;
      }
      it = elves.emplace(module, std::move(f)).first;
    }
    return it->second ? &*it->second : nullptr;
  };
  for (trace::RankTrace& t : run.ranks) {
    std::map<std::uint64_t, std::optional<Routine>> routine_of_site;
    const auto routine = [&](std::uint64_t site) -> const std::optional<Routine>& {
      auto it = routine_of_site.find(site);
      if (it != routine_of_site.end()) return it->second;
      std::optional<Routine> r;
      if (auto s = t.sites.find(site); s != t.sites.end()) {
        const auto& fr = s->second.frames;
        std::size_t i = 0;
        while (i < fr.size() && mpi_library(fr[i].module)) ++i;
        if (i + 1 < fr.size())
          if (const ElfFunctions* f = functions(fr[i].module)) {
            std::string name = f->function_at(fr[i].offset);
            // no symbol: a function called from another module (main, from libc's start code) gets none
            if (name.empty() && fr[i + 1].module != fr[i].module) name = "main";
            if (name.empty()) {
              name = fs::path(fr[i + 1].module).filename().string() + "+" + hex(fr[i + 1].offset);  // no symbol: named by the call's return address
              by_address.insert(name);
            }
            if (name != "main" && name != "MAIN__")
              r = Routine{name, trace::site_hash({fr.begin() + static_cast<std::ptrdiff_t>(i) + 1, fr.end()})};
          }
      }
      return routine_of_site.emplace(site, std::move(r)).first->second;
    };
    std::map<std::string, std::int32_t> name_id;
    for (std::size_t k = 0; k < t.names.size(); ++k) name_id.emplace(t.names[k], static_cast<std::int32_t>(k));
    const auto marker = [&](trace::Kind kind, const Routine& r, double time) {
      auto [it, fresh] = name_id.try_emplace(r.name, static_cast<std::int32_t>(t.names.size()));
      if (fresh) t.names.push_back(r.name);
      trace::Event m;
      m.kind = kind;
      m.t_enter = m.t_exit = time;
      m.tag = it->second;
      // one marker site per routine and call line, begin and end apart
      std::vector<trace::Frame> frames{{(kind == trace::Kind::REGION_BEGIN ? "<begin " : "<end ") + r.name + ">", r.caller}};
      m.site = trace::site_hash(frames);
      t.sites.try_emplace(m.site, trace::CallSite{m.site, std::move(frames)});
      return m;
    };
    std::vector<trace::Event> out;
    out.reserve(t.events.size() + t.events.size() / 2);
    std::optional<Routine> open;
    std::uint64_t first_site = 0;
    double last_exit = 0;
    const auto close = [&] {
      if (open) out.push_back(marker(trace::Kind::REGION_END, *open, last_exit));
      open.reset();
    };
    for (const trace::Event& e : t.events) {
      if (e.kind == trace::Kind::COMPLETE) {
        out.push_back(e);
        continue;
      }
      const std::optional<Routine> r = trace::is_annotation(e.kind) || e.site == 0 ? std::nullopt : routine(e.site);
      const bool same = open && r && r->name == open->name && r->caller == open->caller && e.site != first_site;
      trace::Event call = e;
      if (!same) {
        close();
        if (r) {
          trace::Event begin = marker(trace::Kind::REGION_BEGIN, *r, e.t_enter);
          if (e.cpu_gap >= 0) {  // the gap's CPU time moves to the marker, which now ends the gap
            begin.cpu_gap = e.cpu_gap;
            call.cpu_gap = 0;
          }
          out.push_back(begin);
          open = r;
          first_site = e.site;
          ++report.regions;
        }
      }
      out.push_back(call);
      last_exit = e.t_exit;
    }
    close();
    t.events = std::move(out);
  }
  report.by_address.assign(by_address.begin(), by_address.end());
  return report;
}

}  // namespace mksim::skeletons::builder
