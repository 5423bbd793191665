// The sweep driver: grid -> tasks (a replay per point, a model child per platform and P) -> a pool of child
// processes multiplexed with poll() -> one journal line per (point, method) as it completes -> the table.
// Distributed ranks claim tasks with exclusive file creation in the output's state directory and journal to
// files of their own; rank 0 waits for every rank's end marker and writes the table.
#include "sim/sweep/sweep.hpp"

#include "results/sweep_table.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "sim/engine/replay.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifndef MKSIM_VERSION
#define MKSIM_VERSION "0.0.0"
#endif

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace mksim::sim {

namespace {

const char* const REPLAY = "replay";
const char* const MODEL = "model";

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// FNV-1a, 64 bits: a file name for a task's claim.
std::string hash_name(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/** @brief One result line: what a method gave at a point. */
struct Record {
  std::string key;
  std::string part;  // "replay" or "model"
  results::SweepPart value;
};

double json_number(const nlohmann::json& j, const char* name) {
  const auto& v = j.at(name);
  return v.is_null() ? std::nan("") : v.get<double>();
}

std::string record_line(const Record& r) {
  nlohmann::json j;
  j["key"] = r.key;
  j["part"] = r.part;
  j["status"] = r.value.status;
  j["error"] = r.value.error;
  // NaN is written as null by nlohmann::json and read back as NaN.
  j["time_s"] = r.value.time_s;
  j["compute_s"] = r.value.compute_s;
  j["comm_s"] = r.value.comm_s;
  j["wait_s"] = r.value.wait_s;
  j["messages"] = r.value.messages;
  j["wall_s"] = r.value.wall_s;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Record parse_record(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line);
  Record r;
  r.key = j.at("key").get<std::string>();
  r.part = j.at("part").get<std::string>();
  if (r.part != REPLAY && r.part != MODEL) throw std::runtime_error("unknown part \"" + r.part + "\"");
  r.value.status = j.at("status").get<std::string>();
  r.value.error = j.at("error").get<std::string>();
  r.value.time_s = json_number(j, "time_s");
  r.value.compute_s = json_number(j, "compute_s");
  r.value.comm_s = json_number(j, "comm_s");
  r.value.wait_s = json_number(j, "wait_s");
  r.value.messages = j.at("messages").get<std::uint64_t>();
  r.value.wall_s = j.at("wall_s").get<double>();
  return r;
}

/** @brief Work for one child: a replay of one point, or the model at every listed point of one platform and P. */
struct Task {
  std::string part;
  std::vector<std::size_t> points;  // indexes into the grid
  std::string id;                   // part + the point key (replay) or platform|P (model)
  int P = 0;
};

/** @brief A child running a task, and what it has said so far. */
struct Running {
  Task task;
  Child child;
  Clock::time_point started;
  std::string buffer;
  std::set<std::size_t> reported;
  bool timed_out = false;
};

int cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::map<std::string, double> param_map(const SweepGrid& grid, const SweepPoint& p) {
  std::map<std::string, double> m;
  for (std::size_t i = 0; i < grid.params.size(); ++i) m[grid.params[i].first] = p.params[i];
  return m;
}

void limit_memory(double bytes) {
  if (bytes <= 0) return;
  rlimit lim{};
  lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(bytes);
  setrlimit(RLIMIT_AS, &lim);
}

// The child of a replay task: one line.
int replay_child(int fd, const skeletons::Skeleton& skeleton, const SweepOptions& opt, const SweepPoint& point) {
  limit_memory(opt.memory_limit_bytes);
  Record rec{point.key, REPLAY, {}};
  const auto t0 = Clock::now();
  try {
    ReplayOptions ro;
    ro.platform_path = point.platform_file;
    ro.P = point.P;
    ro.params = param_map(opt.grid, point);
    ro.seed = opt.seed;
    ro.collectives = opt.collectives;
    ro.load_file = opt.load_file;
    ro.load_seed = opt.load_seed;
    ro.noise_gain = noise_gain_for(skeleton, ro);  // calibrate=program noise (children, before this one's engine)
    const results::RunResult r = replay(skeleton, ro);
    const results::RankTimes& critical = r.ranks.at(static_cast<std::size_t>(r.critical_rank));
    rec.value.status = "ok";
    rec.value.time_s = r.predicted_time_s;
    rec.value.compute_s = critical.compute_s;
    rec.value.comm_s = critical.comm_s;
    rec.value.wait_s = critical.wait_s;
    rec.value.messages = r.total_messages;
  } catch (const DeadlockError& e) {
    rec.value.status = "deadlock";
    rec.value.error = e.what();
  } catch (const std::exception& e) {
    rec.value.status = "error";
    rec.value.error = e.what();
  }
  rec.value.wall_s = seconds_since(t0);
  write_all(fd, record_line(rec));
  return 0;
}

// The child of a model task: the platform loaded once, one line per point as each is derived.
int model_child(int fd, const skeletons::Skeleton& skeleton, const SweepOptions& opt, const std::vector<SweepPoint>& points,
                const Task& task) {
  limit_memory(opt.memory_limit_bytes);
  const SweepPoint& first = points[task.points.front()];
  auto t0 = Clock::now();
  std::string load_error;
  MachineModel machine;
  try {
    machine = load_machine_model(first.platform_file, first.P);
  } catch (const std::exception& e) {
    load_error = e.what();
  }
  for (std::size_t index : task.points) {
    const SweepPoint& point = points[index];
    Record rec{point.key, MODEL, {}};
    if (!load_error.empty()) {
      rec.value.status = "error";
      rec.value.error = load_error;
    } else {
      try {
        ModelOptions mo;
        mo.P = point.P;
        mo.params = param_map(opt.grid, point);
        mo.skew = opt.skew;
        mo.collectives = opt.collectives;
        const AnalyticModel m = derive_model(skeleton, machine, mo);
        double compute = 0;
        for (const ModelTerm& t : m.terms)
          if (t.kind == "compute") compute += t.value_s;
        rec.value.status = "ok";
        rec.value.time_s = m.value_s;
        rec.value.compute_s = compute;
        rec.value.comm_s = m.value_s - compute;
      } catch (const std::exception& e) {
        rec.value.status = "error";
        rec.value.error = e.what();
      }
    }
    rec.value.wall_s = seconds_since(t0);  // the first point also carries the platform's loading
    t0 = Clock::now();
    if (!write_all(fd, record_line(rec))) return 1;
  }
  return 0;
}

/** @brief Closes a file descriptor when it goes out of scope. */
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/** @brief The output's state directory: journals, claims, end markers. */
struct StateDir {
  fs::path dir;
  fs::path journal;  // this process's journal
  fs::path claims;   // distributed: this launch's claims
  fs::path ends;     // distributed: this launch's end markers
};

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

void append(int fd, const std::string& line, const fs::path& file) {
  if (!write_all(fd, line)) throw std::runtime_error(file.string() + ": cannot append to the journal: " + std::strerror(errno));
}

void sync(int fd, const fs::path& file) {
  if (fdatasync(fd) != 0) throw std::runtime_error(file.string() + ": cannot sync the journal: " + std::strerror(errno));
}

void append_durably(int fd, const std::string& line, const fs::path& file) {
  append(fd, line, file);
  sync(fd, file);
}

/** @brief The journal's header line: which skeleton and parameters its records belong to. */
std::string header_line(const std::string& skeleton_hash, const std::vector<std::string>& params) {
  nlohmann::json j;
  j["mksim-sweep-journal"] = 1;
  j["skeleton.hash"] = skeleton_hash;
  j["params"] = params;
  return j.dump() + "\n";
}

/** @brief Reads every journal of the state directory: records by (key, part), later lines winning. A torn last
 *  line (a crash mid-append) is skipped with a note; anything else malformed is an error naming file and line. */
void read_journals(const fs::path& dir, const std::string& skeleton_hash, const std::vector<std::string>& params,
                   std::map<std::pair<std::string, std::string>, results::SweepPart>& records, std::ostream* notes) {
  if (!fs::is_directory(dir)) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t start = 0;
    int line_no = 0;
    while (start < text.size()) {
      const std::size_t nl = text.find('\n', start);
      ++line_no;
      if (nl == std::string::npos) {
        if (notes) *notes << "mksim sweep: " << f.string() << ":" << line_no << ": skipping a torn last line (interrupted write)\n";
        break;
      }
      const std::string line = text.substr(start, nl - start);
      start = nl + 1;
      const std::string where = f.string() + ":" + std::to_string(line_no);
      try {
        if (line_no == 1) {
          const nlohmann::json h = nlohmann::json::parse(line);
          if (!h.contains("mksim-sweep-journal")) throw std::runtime_error("not a sweep journal header");
          if (h.at("skeleton.hash").get<std::string>() != skeleton_hash)
            throw std::runtime_error("journal of another skeleton (hash " + h.at("skeleton.hash").get<std::string>() +
                                     "); remove " + dir.string() + " to start over");
          if (h.at("params").get<std::vector<std::string>>() != params)
            throw std::runtime_error("journal of a sweep over other parameters; remove " + dir.string() + " to start over");
          continue;
        }
        Record r = parse_record(line);
        records[{r.key, r.part}] = r.value;
      } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(where + ": malformed journal line: " + e.what());
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(where + ": " + e.what());
      }
    }
  }
}

}  // namespace

std::string point_key(const std::string& platform, int P, const std::vector<std::string>& names,
                      const std::vector<double>& values) {
  std::string key = platform + "|P=" + std::to_string(P);
  for (std::size_t i = 0; i < names.size(); ++i) key += "|" + names[i] + "=" + results::format_value(values[i]);
  return key;
}

std::vector<SweepPoint> expand_grid(const SweepGrid& grid) {
  std::vector<std::string> names;
  for (const auto& [n, v] : grid.params) names.push_back(n);
  std::vector<SweepPoint> out;
  for (std::size_t k = 0; k < grid.platforms.size(); ++k)
    for (int P : grid.Ps) {
      const std::string& platform = grid.platforms[k];
      const std::string& file = k < grid.platform_files.size() ? grid.platform_files[k] : platform;
      std::vector<std::size_t> at(grid.params.size(), 0);
      while (true) {
        SweepPoint p{platform, file, P, {}, {}};
        for (std::size_t i = 0; i < at.size(); ++i) p.params.push_back(grid.params[i].second[at[i]]);
        p.key = point_key(platform, P, names, p.params);
        out.push_back(std::move(p));
        // Odometer over the parameter axes, the last fastest.
        std::size_t d = at.size();
        while (d > 0 && ++at[d - 1] == grid.params[d - 1].second.size()) at[--d] = 0;
        if (d == 0) break;
      }
    }
  return out;
}

Launcher detect_launcher() {
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v ? v : "";
  };
  auto number = [](const std::string& text, const char* what) {
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 0)
      throw std::runtime_error(std::string("the launcher's ") + what + " \"" + text + "\" is not a number");
    return static_cast<int>(v);
  };
  Launcher l;
  struct Source {
    const char* name;
    const char* rank;
    const char* size;
  };
  for (const Source& s : {Source{"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                          Source{"PMI", "PMI_RANK", "PMI_SIZE"}, Source{"Slurm", "SLURM_PROCID", "SLURM_NTASKS"}}) {
    if (env(s.size).empty()) continue;
    l.name = s.name;
    l.rank = number(env(s.rank), s.rank);
    l.size = number(env(s.size), s.size);
    break;
  }
  if (l.size <= 1) return Launcher{};
  if (l.rank >= l.size) throw std::runtime_error("the launcher says rank " + std::to_string(l.rank) + " of " + std::to_string(l.size));
  for (const char* id : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"})
    if (!env(id).empty()) {
      l.job = env(id);
      break;
    }
  if (l.job.empty() && !env("SLURM_JOB_ID").empty()) l.job = env("SLURM_JOB_ID") + "." + env("SLURM_STEP_ID");
  if (l.job.empty())
    throw std::runtime_error("launched as rank " + std::to_string(l.rank) + " of " + std::to_string(l.size) + " (" + l.name +
                             ") but no job identifier (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID) names the launch");
  return l;
}

SweepSummary run_sweep(const skeletons::Skeleton& skeleton, const SweepOptions& opt) {
  const auto t_start = Clock::now();
  if (opt.output.empty()) throw std::runtime_error("a sweep needs an output file");
  if (!opt.replay && !opt.model) throw std::runtime_error("a sweep needs replay, model or both");
  if (opt.grid.platforms.empty() || opt.grid.Ps.empty()) throw std::runtime_error("a sweep needs at least one platform and one P");
  std::vector<std::string> names;
  for (const auto& [n, v] : opt.grid.params) {
    if (v.empty()) throw std::runtime_error("parameter " + n + " has no values");
    if (!names.empty() && n <= names.back()) throw std::runtime_error("sweep parameters must be sorted by name and distinct");
    names.push_back(n);
  }
  const bool distributed = opt.launcher.size > 1;
  const int rank = opt.launcher.rank;
  const std::vector<SweepPoint> points = expand_grid(opt.grid);
  SweepSummary summary;
  summary.points = points.size();

  char hash_buf[17];
  std::snprintf(hash_buf, sizeof hash_buf, "%016llx", static_cast<unsigned long long>(skeleton.hash));
  const std::string skeleton_hash = hash_buf;

  // What is done already: the table (when there is one), then the journals (later wins).
  std::map<std::pair<std::string, std::string>, results::SweepPart> done;
  std::vector<results::SweepRow> foreign;  // rows of the old table that are not in this grid: kept
  std::set<std::string> grid_keys;
  for (const SweepPoint& p : points) grid_keys.insert(p.key);
  if (fs::exists(opt.output)) {
    const results::SweepTable old = results::read_sweep_hdf5(opt.output);
    std::string old_hash;
    for (const auto& [k, v] : old.attributes)
      if (k == "skeleton.hash") old_hash = v;
    if (old_hash != skeleton_hash)
      throw std::runtime_error(opt.output + ": made from another skeleton (hash " + old_hash + ", this one " + skeleton_hash +
                               "); choose another output file or remove it");
    if (old.param_names != names) {
      std::string a, b;
      for (const auto& n : old.param_names) a += (a.empty() ? "" : ",") + n;
      for (const auto& n : names) b += (b.empty() ? "" : ",") + n;
      throw std::runtime_error(opt.output + ": a sweep over parameters {" + a + "}, this one is over {" + b +
                               "}; choose another output file or remove it");
    }
    for (const results::SweepRow& row : old.rows) {
      const std::string key = point_key(row.platform, row.P, names, row.params);
      if (!grid_keys.count(key)) {
        foreign.push_back(row);
        continue;
      }
      if (row.replay.status != "not run") done[{key, REPLAY}] = row.replay;
      if (row.model.status != "not run") done[{key, MODEL}] = row.model;
    }
  }
  StateDir state;
  state.dir = opt.output + ".sweep";
  std::error_code ec;
  fs::create_directories(state.dir, ec);
  if (ec) throw std::runtime_error(state.dir.string() + ": cannot create the sweep's state directory: " + ec.message());
  Fd lock_fd;
  if (!distributed) {
    // One local sweep per output at a time.
    const fs::path lock = state.dir / "lock";
    lock_fd.fd = ::open(lock.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock_fd.fd < 0 || flock(lock_fd.fd, LOCK_EX | LOCK_NB) != 0)
      throw std::runtime_error(opt.output + ": another sweep is writing this file (lock " + lock.string() + ")");
  }
  read_journals(state.dir, skeleton_hash, names, done, opt.progress);
  const std::string me = distributed ? sanitize(opt.launcher.job) + "-" + std::to_string(rank) : "local";
  state.journal = state.dir / ("journal-" + me + ".jsonl");
  if (distributed) {
    state.claims = state.dir / ("claims-" + sanitize(opt.launcher.job));
    state.ends = state.dir / ("ends-" + sanitize(opt.launcher.job));
    fs::create_directories(state.claims, ec);
    fs::create_directories(state.ends, ec);
    if (ec) throw std::runtime_error(state.dir.string() + ": cannot create the claims directory: " + ec.message());
  }

  auto is_done = [&](const std::string& key, const char* part) {
    const auto it = done.find({key, part});
    if (it == done.end()) return false;
    return !(opt.retry_failed && it->second.status != "ok");
  };

  // Tasks: model groups first (cheap), then replays, larger P first (the longest simulations start first).
  std::vector<Task> tasks;
  if (opt.model) {
    std::map<std::pair<std::string, int>, Task> groups;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (is_done(points[i].key, MODEL)) {
        ++summary.reused;
        continue;
      }
      Task& t = groups[{points[i].platform, points[i].P}];
      t.part = MODEL;
      t.P = points[i].P;
      t.id = std::string(MODEL) + "|" + points[i].platform + "|P=" + std::to_string(points[i].P);
      t.points.push_back(i);
    }
    for (auto& [k, t] : groups) tasks.push_back(std::move(t));
  }
  if (opt.replay)
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (is_done(points[i].key, REPLAY)) {
        ++summary.reused;
        continue;
      }
      tasks.push_back(Task{REPLAY, {i}, std::string(REPLAY) + "|" + points[i].key, points[i].P});
    }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) {
    if (a.part != b.part) return a.part == MODEL;
    return a.P > b.P;
  });
  std::size_t total_results = 0;
  for (const Task& t : tasks) total_results += t.points.size();

  // The journal: a header line, then one line per result, synced as written.
  const bool fresh_journal = !fs::exists(state.journal);
  const Fd journal(::open(state.journal.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644));
  const int journal_fd = journal.fd;
  if (journal_fd < 0) throw std::runtime_error(state.journal.string() + ": cannot open the journal: " + std::strerror(errno));
  if (fresh_journal) append_durably(journal_fd, header_line(skeleton_hash, names), state.journal);

  auto attributes = [&] {
    std::vector<std::pair<std::string, std::string>> a;
    a.emplace_back("skeleton", opt.skeleton_path);
    a.emplace_back("skeleton.hash", skeleton_hash);
    std::string platforms;
    for (const auto& p : opt.grid.platforms) platforms += (platforms.empty() ? "" : ",") + p;
    a.emplace_back("platforms", platforms);
    a.emplace_back("mode", opt.replay && opt.model ? "both" : opt.replay ? "replay" : "model");
    a.emplace_back("seed", std::to_string(opt.seed));
    a.emplace_back("skew", opt.skew ? "1" : "0");
    if (!opt.load_file.empty()) {
      a.emplace_back("load.file", opt.load_file);
      a.emplace_back("load.seed", std::to_string(opt.load_seed));
    }
    if (opt.collectives) {
      std::string dbs, fit;
      for (const auto& f : opt.collectives->sources) dbs += (dbs.empty() ? "" : ",") + f;
      for (const auto& d : describe(*opt.collectives)) fit += (fit.empty() ? "" : "; ") + d;
      a.emplace_back("collectives.databases", dbs);
      a.emplace_back("collectives.measured", fit);
    }
    a.emplace_back("tool", std::string("mksim ") + MKSIM_VERSION);
    a.emplace_back("command", opt.command);
    std::sort(a.begin(), a.end());
    return a;
  };
  // The table from what is done: the grid's points with every requested method recorded, then old foreign rows.
  auto write_table = [&](const std::map<std::pair<std::string, std::string>, results::SweepPart>& records,
                         std::size_t* failed) {
    results::SweepTable table;
    table.param_names = names;
    table.attributes = attributes();
    for (const SweepPoint& p : points) {
      results::SweepRow row{p.platform, p.P, p.params, {}, {}};
      bool complete = true;
      for (const char* part : {REPLAY, MODEL}) {
        const bool wanted = part == REPLAY ? opt.replay : opt.model;
        const auto it = records.find({p.key, part});
        if (it != records.end()) (part == REPLAY ? row.replay : row.model) = it->second;
        else if (wanted) complete = false;
      }
      if (!complete) continue;
      if (failed && row.status() != "ok") ++*failed;
      table.rows.push_back(std::move(row));
    }
    for (const auto& row : foreign) table.rows.push_back(row);
    results::write_sweep_hdf5(opt.output, table);
  };

  // The pool.
  const int jobs = opt.jobs > 0 ? opt.jobs : distributed ? 1 : cores();
  std::vector<Running> running;
  std::size_t next = 0, completed = 0, failed_now = 0;
  auto last_checkpoint = Clock::now(), last_draw = Clock::now() - std::chrono::seconds(10);
  std::ostream* progress = opt.progress;
  auto draw = [&](bool final) {
    if (!progress || !opt.progress_bar || (distributed && rank != 0)) return;
    if (!final && seconds_since(last_draw) < 0.2) return;
    last_draw = Clock::now();
    const double elapsed = seconds_since(t_start);
    const double rate = elapsed > 0 ? completed / elapsed : 0;
    const int width = 30;
    const double frac = total_results ? static_cast<double>(completed) / total_results : 1.0;
    const int filled = static_cast<int>(frac * width);
    char eta[32] = "--:--";
    if (rate > 0 && completed < total_results) {
      const long s = std::lround((total_results - completed) / rate);
      std::snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    char line[200];
    std::snprintf(line, sizeof line, "\r[%s%s] %zu/%zu done, %zu failed, %.2f/s, ETA %s ",
                  std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(width - filled), '.').c_str(), completed, total_results, failed_now,
                  rate, eta);
    *progress << line << (final ? "\n" : "") << std::flush;
  };
  bool unsynced = false;
  auto record = [&](const Record& r) {
    append(journal_fd, record_line(r), state.journal);  // synced once the freed workers have new work
    unsynced = true;
    done[{r.key, r.part}] = r.value;
    ++completed;
    ++summary.computed;
    if (r.value.status != "ok") ++failed_now;
  };
  auto claim = [&](const Task& t) {
    if (!distributed) return true;
    const fs::path f = state.claims / hash_name(t.id);
    const int fd = ::open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) return false;
      throw std::runtime_error(f.string() + ": cannot claim a task: " + std::strerror(errno));
    }
    write_all(fd, t.id + "\n");
    ::close(fd);
    return true;
  };
  auto start = [&](Task task) {
    Running r;
    r.started = Clock::now();
    r.task = std::move(task);
    const Task& t = r.task;
    if (t.part == REPLAY)
      r.child = start_child([&](int fd) { return replay_child(fd, skeleton, opt, points[t.points.front()]); }, "a sweep point");
    else
      r.child = start_child([&](int fd) { return model_child(fd, skeleton, opt, points, t); }, "a sweep model");
    running.push_back(std::move(r));
  };
  // The child has closed its pipe: reap it, and record a failure for every point it did not report.
  auto finish = [&](Running& r) {
    int status = 0;
    while (waitpid(r.child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(r.child.fd);
    std::string why, kind = "error";
    if (r.timed_out) {
      kind = "timeout";
      why = "killed after the time limit of " + results::format_value(opt.timeout_s) + " s";
    } else if (WIFSIGNALED(status)) {
      kind = "killed";
      why = "the simulation was killed by signal " + std::to_string(WTERMSIG(status)) +
            (WTERMSIG(status) == SIGKILL ? " (out of memory?)" : "");
    } else {
      why = "the simulation ended (exit code " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
            ") without a result" + (r.buffer.empty() ? "" : ": " + r.buffer);
    }
    for (std::size_t index : r.task.points)
      if (!r.reported.count(index)) {
        Record rec{points[index].key, r.task.part, {}};
        rec.value.status = kind;
        rec.value.error = why;
        rec.value.wall_s = seconds_since(r.started);
        record(rec);
      }
  };
  // Lines the child wrote: each a record of one of its points.
  auto consume = [&](Running& r) {
    std::size_t nl;
    while ((nl = r.buffer.find('\n')) != std::string::npos) {
      const std::string line = r.buffer.substr(0, nl);
      r.buffer.erase(0, nl + 1);
      Record rec;
      try {
        rec = parse_record(line);
      } catch (const std::exception&) {
        r.buffer = line;  // reported by finish() as the child's last words
        return;
      }
      for (std::size_t index : r.task.points)
        if (points[index].key == rec.key && !r.reported.count(index)) {
          r.reported.insert(index);
          record(rec);
          break;
        }
    }
  };

  while (next < tasks.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < tasks.size()) {
      Task t = tasks[next++];
      if (claim(t)) start(std::move(t));
    }
    if (unsynced) {
      sync(journal_fd, state.journal);
      unsynced = false;
    }
    if (running.empty()) break;
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.child.fd, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), 200);
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("sweep: poll: ") + std::strerror(errno));
    for (std::size_t i = running.size(); i-- > 0;) {
      Running& r = running[i];
      bool closed = false;
      if (n > 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[65536];
        const ssize_t got = ::read(r.child.fd, buf, sizeof buf);
        if (got > 0) {
          r.buffer.append(buf, static_cast<std::size_t>(got));
          consume(r);
        } else if (got == 0 || errno != EINTR) {
          closed = true;
        }
      }
      if (!closed && !r.timed_out && opt.timeout_s > 0 && seconds_since(r.started) > opt.timeout_s) {
        r.timed_out = true;
        ::kill(r.child.pid, SIGKILL);
      }
      if (closed) {
        finish(r);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    draw(false);
    if (opt.checkpoint_s > 0 && seconds_since(last_checkpoint) > opt.checkpoint_s && (!distributed || rank == 0)) {
      std::map<std::pair<std::string, std::string>, results::SweepPart> all = done;
      if (distributed) read_journals(state.dir, skeleton_hash, names, all, nullptr);
      write_table(all, nullptr);
      last_checkpoint = Clock::now();
    }
  }
  if (unsynced) sync(journal_fd, state.journal);
  draw(true);

  if (distributed) {
    // Say this rank is done; rank 0 waits for all, then writes the table from every rank's journal.
    std::ofstream(state.ends / std::to_string(rank)) << "done\n";
    if (rank != 0) {
      summary.wall_s = seconds_since(t_start);
      return summary;
    }
    while (true) {
      int ended = 0;
      for (int r = 0; r < opt.launcher.size; ++r) ended += fs::exists(state.ends / std::to_string(r));
      if (ended == opt.launcher.size) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    read_journals(state.dir, skeleton_hash, names, done, opt.progress);
    // Report what the whole launch computed: the records in every rank's journal of this job.
    summary.computed = 0;
    for (int r = 0; r < opt.launcher.size; ++r) {
      std::ifstream in(state.dir / ("journal-" + sanitize(opt.launcher.job) + "-" + std::to_string(r) + ".jsonl"));
      std::size_t lines = 0;
      for (std::string l; std::getline(in, l);) ++lines;
      if (lines > 0) summary.computed += lines - 1;  // the header
    }
  }
  write_table(done, &summary.failed);
  summary.wrote_table = true;
  // The table holds everything now: the journals and claims can go.
  fs::remove_all(state.dir, ec);
  summary.wall_s = seconds_since(t_start);
  return summary;
}

}  // namespace mksim::sim
