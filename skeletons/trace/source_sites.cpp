#include "skeletons/trace/source_sites.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace mksim::trace {
namespace {

namespace fs = std::filesystem;

// One ELF file opened with libdw, and what its addresses resolved to.
class Module {
 public:
  explicit Module(const std::string& path) {
    static const Dwfl_Callbacks callbacks = {
        .find_elf = nullptr,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = nullptr,
    };
    dwfl_ = dwfl_begin(&callbacks);
    if (!dwfl_) return;
    dwfl_report_begin(dwfl_);
    mod_ = dwfl_report_offline(dwfl_, "", path.c_str(), -1);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    if (!mod_) return;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(mod_, &bias);
    if (!elf) {
      mod_ = nullptr;
      return;
    }
    // the tracer's offset is from dladdr's dli_fbase, where the file's first byte is mapped: the first PT_LOAD's
    // p_vaddr - p_offset is that byte's link-time address (0 for a PIE or a library)
    std::size_t nph = 0;
    if (elf_getphdrnum(elf, &nph) != 0) {
      mod_ = nullptr;
      return;
    }
    for (std::size_t i = 0; i < nph; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        base_ = ph.p_vaddr - ph.p_offset + bias;
        break;
      }
    }
  }
  ~Module() {
    if (dwfl_) dwfl_end(dwfl_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The source key of the return address at `offset`: "file:line:col" of the call, then "<file:line:col" of each
  // inlined call around it (innermost first); nullopt without line information.
  std::optional<std::string> key(std::uint64_t offset) {
    if (!mod_ || offset == 0) return std::nullopt;
    if (auto it = keys_.find(offset); it != keys_.end()) return it->second;
    std::optional<std::string>& k = keys_[offset];
    const Dwarf_Addr pc = base_ + offset - 1;  // inside the call instruction, not after it
    Dwfl_Line* line = dwfl_module_getsrc(mod_, pc);
    int lineno = 0, col = 0;
    const char* file = line ? dwfl_lineinfo(line, nullptr, &lineno, &col, nullptr, nullptr) : nullptr;
    if (!file || lineno <= 0) return k;
    std::string s = std::string(file) + ":" + std::to_string(lineno) + ":" + std::to_string(col);
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(mod_, pc, &cu_bias);
    Dwarf_Die* scopes = nullptr;
    const int n = cu ? dwarf_getscopes(cu, pc - cu_bias, &scopes) : 0;
    Dwarf_Files* files = nullptr;
    std::size_t nfiles = 0;
    if (n > 0 && dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;
    for (int i = 0; i < n; ++i) {
      if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
      Dwarf_Attribute a;
      Dwarf_Word f = 0, l = 0, c = 0;
      dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &f);
      dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &l);
      dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_column, &a), &c);
      const char* fname = files && f < nfiles ? dwarf_filesrc(files, f, nullptr, nullptr) : nullptr;
      s += "<" + std::string(fname ? fname : "?") + ":" + std::to_string(l) + ":" + std::to_string(c);
    }
    std::free(scopes);
    k = std::move(s);
    return k;
  }

 private:
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* mod_ = nullptr;
  Dwarf_Addr base_ = 0;
  std::map<std::uint64_t, std::optional<std::string>> keys_;
};

// The modules opened so far, by path and modification time (a rebuilt binary is another module).
std::mutex modules_mutex;
std::map<std::pair<std::string, fs::file_time_type>, std::unique_ptr<Module>>& modules() {
  static std::map<std::pair<std::string, fs::file_time_type>, std::unique_ptr<Module>> m;
  return m;
}

// The file a recorded module path names, and its modification time; nullopt if it cannot be the traced one.
std::optional<std::pair<std::string, fs::file_time_type>> module_file(const std::string& recorded, const Run& run,
                                                                      const fs::file_time_type& traced) {
  if (recorded.empty() || recorded == "?") return std::nullopt;
  fs::path p(recorded);
  if (p.is_relative()) {
    if (run.executable.empty() || fs::path(run.executable).filename() != p.filename()) return std::nullopt;
    p = run.executable;
  }
  std::error_code ec;
  const fs::file_time_type t = fs::last_write_time(p, ec);
  if (ec || t > traced) return std::nullopt;  // gone, or rebuilt since the trace was written
  return std::make_pair(p.string(), t);
}

}  // namespace

SourceSiteStats key_sites_by_source(Run& run) {
  SourceSiteStats stats;
  // per rank: old hash -> (source key of the whole site, the site's frames for ordering); "" when none resolved
  std::vector<std::map<std::uint64_t, std::string>> keys(run.ranks.size());
  {
    const std::lock_guard<std::mutex> lock(modules_mutex);
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      RankTrace& t = run.ranks[r];
      std::error_code ec;
      const fs::file_time_type traced = fs::last_write_time(t.file, ec);
      for (const auto& [hash, site] : t.sites) {
        ++stats.sites;
        std::string whole;
        bool any = false;
        for (const Frame& f : site.frames) {
          std::optional<std::string> k;
          if (!ec)
            if (auto file = module_file(f.module, run, traced)) {
              auto& m = modules()[*file];
              if (!m) m = std::make_unique<Module>(file->first);
              k = m->key(f.offset);
            }
          if (k) {
            any = true;
            whole += *k;
          } else {
            whole += fs::path(f.module).filename().string() + "+" + std::to_string(f.offset);
          }
          whole += '\n';
        }
        if (!any) continue;
        ++stats.resolved;
        keys[r][hash] = whole;
      }
    }
  }
  // the new hash of each address site: its key's (address sites with one key become one site)
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    RankTrace& t = run.ranks[r];
    if (keys[r].empty()) continue;
    std::map<std::uint64_t, std::uint64_t> rehash;
    std::map<std::uint64_t, CallSite> sites;
    for (auto& [hash, site] : t.sites) {
      auto k = keys[r].find(hash);
      if (k == keys[r].end()) {
        sites.emplace(hash, std::move(site));
        continue;
      }
      const std::uint64_t h = site_hash({Frame{k->second, 0}});
      rehash[hash] = h;
      site.hash = h;
      if (!sites.emplace(h, std::move(site)).second) ++stats.merged;
    }
    for (Event& e : t.events)
      if (auto it = rehash.find(e.site); it != rehash.end()) e.site = it->second;
    t.sites = std::move(sites);
  }
  return stats;
}

}  // namespace mksim::trace
