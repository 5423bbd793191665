// replay_in_child: fork, replay in the child, JSON through a pipe, waitpid. The child leaves with _exit so
// that nothing of the parent's (buffers, atexit handlers, SimGrid's teardown) runs twice.
#include "sim/engine/isolate.hpp"

#include "sim/engine/load.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/engine/phase_patterns.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mksim::sim {

std::string run_result_to_json(const results::RunResult& r) {
  nlohmann::json j;
  j["attributes"] = r.attributes;
  j["predicted_time_s"] = r.predicted_time_s;
  j["critical_rank"] = r.critical_rank;
  j["total_messages"] = r.total_messages;
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (const auto& t : r.ranks)
    ranks.push_back({t.finish_s, t.compute_s, t.comm_s, t.wait_s, t.messages_sent, t.bytes_sent});
  auto& blocks = j["blocks"] = nlohmann::json::array();
  for (const auto& b : r.blocks) blocks.push_back({b.id, b.op, b.phase, b.executions, b.time_s, b.bytes});
  auto& phases = j["phases"] = nlohmann::json::array();
  for (const auto& p : r.phases) phases.push_back({p.phase, p.compute_s, p.comm_s, p.wait_s, p.critical_rank_s, p.end_s});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

results::RunResult run_result_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  results::RunResult r;
  r.attributes = j.at("attributes").get<std::vector<std::pair<std::string, std::string>>>();
  r.predicted_time_s = j.at("predicted_time_s").get<double>();
  r.critical_rank = j.at("critical_rank").get<int>();
  r.total_messages = j.at("total_messages").get<std::uint64_t>();
  for (const auto& t : j.at("ranks"))
    r.ranks.push_back({t[0].get<double>(), t[1].get<double>(), t[2].get<double>(), t[3].get<double>(),
                       t[4].get<std::uint64_t>(), t[5].get<std::uint64_t>()});
  for (const auto& b : j.at("blocks"))
    r.blocks.push_back({b[0].get<std::string>(), b[1].get<std::string>(), b[2].get<std::string>(), b[3].get<std::uint64_t>(),
                        b[4].get<double>(), b[5].get<double>()});
  for (const auto& p : j.at("phases"))
    r.phases.push_back({p[0].get<std::string>(), p[1].get<double>(), p[2].get<double>(), p[3].get<double>(), p[4].get<double>(), p[5].get<double>()});
  return r;
}

bool write_all(int fd, const std::string& bytes) {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

Child start_child(const std::function<int(int fd)>& work, const std::string& what) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(what + ": cannot create a pipe: " + std::strerror(errno));
  const pid_t parent = getpid();
  // Whatever the parent's stdio buffers hold would otherwise be written once more by every child that flushes
  // them (SimGrid's exit does): `mkcalib validate | cat` printed its fit report once per replayed run.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(what + ": cannot fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the parent died before the line above
    int code = 0;
    try {
      code = work(fds[1]);
    } catch (const std::exception& e) {
      write_all(fds[1], e.what());
      code = 1;
    }
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  return Child{pid, fds[0]};
}

ChildResult run_in_child(const std::function<std::string()>& work, const std::function<int(const std::exception&)>& code_of,
                         const std::string& what) {
  const Child child = start_child(
      [&](int fd) {
        std::string msg;
        int code = 0;
        try {
          msg = work();
        } catch (const std::exception& e) {
          msg = e.what();
          code = code_of(e);
        }
        write_all(fd, msg);
        return code;
      },
      what);
  ChildResult out;
  char buf[65536];
  while (true) {
    const ssize_t n = read(child.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.output.append(buf, static_cast<std::size_t>(n));
  }
  close(child.fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw std::runtime_error(what + ": the child process was killed by signal " + std::to_string(WTERMSIG(status)) +
                             (WTERMSIG(status) == SIGKILL ? " (out of memory?)" : ""));
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return out;
}

results::RunResult replay_in_child(const skeletons::Skeleton& skeleton, const ReplayOptions& options) {
  const double gain = noise_gain_for(skeleton, options);  // its calibration replays, each in a child of its own
  ChildResult r;
  try {
    r = run_in_child(
        [&] {
          ReplayOptions o = options;
          o.warnings = nullptr;
          o.noise_gain = gain;
          return run_result_to_json(replay(skeleton, o));
        },
        [](const std::exception& e) { return dynamic_cast<const DeadlockError*>(&e) ? 3 : 1; }, "the simulation");
  } catch (const std::runtime_error& e) {
    throw ReplayError(e.what());
  }
  if (r.code == 3) throw DeadlockError(r.output);
  if (r.code != 0) throw ReplayError(r.output);
  return run_result_from_json(r.output);
}

results::RunResult replay_load_seeds(const skeletons::Skeleton& skeleton, const ReplayOptions& options, int seeds) {
  if (seeds < 1) throw ReplayError("--load-seeds must be >= 1");
  results::RunResult first;
  std::vector<double> times;
  std::string seed_list, time_list;
  const double gain = noise_gain_for(skeleton, options);  // once for all the draws
  for (int i = 0; i < seeds; ++i) {
    ReplayOptions o = options;
    o.noise_gain = gain;
    o.load_seed = options.load_seed + static_cast<std::uint64_t>(i);
    results::RunResult r = replay_in_child(skeleton, o);
    times.push_back(r.predicted_time_s);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.10g", r.predicted_time_s);
    seed_list += (i ? "," : "") + std::to_string(o.load_seed);
    time_list += (i ? "," : "") + std::string(buf);
    if (i == 0) first = std::move(r);
  }
  const auto [mean, half] = mean_ci95(times);
  char m[40], h[40];
  std::snprintf(m, sizeof m, "%.10g", mean);
  std::snprintf(h, sizeof h, "%.10g", half);
  auto& a = first.attributes;
  a.erase(std::remove_if(a.begin(), a.end(), [](const auto& kv) { return kv.first == "load.seed"; }), a.end());
  a.emplace_back("load.seeds", seed_list);
  a.emplace_back("load.times_s", time_list);
  a.emplace_back("load.mean_s", m);
  a.emplace_back("load.ci95_s", h);
  std::sort(a.begin(), a.end());
  return first;
}

namespace {

/** @brief ATM2D (skeletons/examples/atm2d.json) without its compute block: per step, red ranks exchange with north,
 *  south, east, west and black ranks with south, north, west, east (isend, irecv, waitall each). */
std::string halo_skeleton() {
  auto exch = [](const std::string& cond, const std::string& peer, int stag, int rtag) {
    return R"J({"op":"if","cond":")J" + cond + R"J(","then":[{"op":"isend","peer":")J" + peer + R"J(","size":256,"tag":)J" +
           std::to_string(stag) + R"J(},{"op":"irecv","peer":")J" + peer + R"J(","size":256,"tag":)J" + std::to_string(rtag) +
           R"J(},{"op":"waitall"}]})J";
  };
  const std::string n = exch("y > 0", "rank - Px", 1, 2), s = exch("y < Py - 1", "rank + Px", 2, 1);
  const std::string e = exch("x < Px - 1", "rank + 1", 3, 4), w = exch("x > 0", "rank - 1", 4, 3);
  return R"J({"format":"mksim-skeleton","version":1,"name":"noise-calibration","params":{"steps":{"default":20}},)J"
         R"J("let":{"Px":"2^floor(log2(P) / 2)","Py":"P / Px","x":"rank % Px","y":"floor(rank / Px)","red":"(x + y) % 2 == 0"},)J"
         R"J("body":[{"op":"loop","count":"steps","body":[{"op":"if","cond":"red","phase":"halo","then":[)J" +
         n + "," + s + "," + e + "," + w + R"J(],"else":[)J" + s + "," + n + "," + w + "," + e + "]}]}]}";
}

constexpr int ROUNDS = 3;  ///< rounds of the gain's fixed-point iteration

std::string attribute(const results::RunResult& r, const std::string& key) {
  for (const auto& [k, v] : r.attributes)
    if (k == key) return v;
  return "";
}

}  // namespace

double program_noise_gain(const std::string& platform_path, int P, double alpha_s, int seeds) {
  if (P <= 1) return 1.0;
  const skeletons::Skeleton sk = skeletons::parse_skeleton(halo_skeleton(), "(noise calibration: ATM2D's exchanges)");
  ReplayOptions o;
  o.platform_path = platform_path;
  o.P = P;
  const double plain = replay_in_child(sk, o).predicted_time_s;
  // The effect grows a little faster than lambda (small detours hide in the slack of waits), so the linear step is
  // repeated: g <- g * target / effect(g), from g = 1 (measured: 4.32 then 3.7 at P = 256 on the Paragon).
  double gain = 1;
  for (int round = 0; round < ROUNDS; ++round) {
    char rule[128];
    std::snprintf(rule, sizeof rule, "noise * alpha=%.17g calibrate=exchange", alpha_s * gain);
    o.load_text = rule;
    const results::RunResult noisy = replay_load_seeds(sk, o, seeds);
    const double mean = std::stod(attribute(noisy, "load.mean_s"));
    const double exchanges = std::stod(attribute(noisy, "noise.rank_detours_max"));
    if (!(mean > plain) || !(exchanges > 0))
      throw ReplayError(platform_path + ": the noise of alpha=" + std::to_string(alpha_s) + " s has no effect at P=" + std::to_string(P) +
                        ", so it cannot be calibrated (give alpha > 0 or calibrate=exchange)");
    gain *= alpha_s * std::sqrt(static_cast<double>(P)) * exchanges / (mean - plain);
  }
  return gain;
}

bool takes_detours(const skeletons::Skeleton& sk, const ReplayOptions& opt) {
  const std::vector<double> frame = skeletons::bind_parameters(sk, opt.P, opt.params);
  for (const auto& ph : phase_patterns(sk, frame, opt.P, {}).phases)
    if (ph.kind == "1d" || ph.kind == "2d" || ph.kind == "3d" || ph.kind == "wildcard") return true;
  return false;
}

double noise_gain_for(const skeletons::Skeleton& sk, const ReplayOptions& opt) {
  if (opt.noise_gain >= 0) return opt.noise_gain;
  if (opt.load_file.empty() && opt.load_text.empty()) return 1.0;
  LoadSpec spec;
  try {
    spec = opt.load_file.empty() ? parse_load_spec(opt.load_text, "(load rules)") : read_load_spec(opt.load_file);
  } catch (const LoadError& e) {
    throw ReplayError(e.what());
  }
  for (const auto& n : spec.noise) {
    if (n.noise.calibrate != "program") continue;
    const double alpha = n.noise.alpha_s >= 0 ? n.noise.alpha_s : platform_skew_alpha(opt.platform_path);
    if (!(alpha > 0)) continue;  // no noise to calibrate (setup_load says why when alpha was left out)
    return takes_detours(sk, opt) ? program_noise_gain(opt.platform_path, opt.P, alpha) : 1.0;
  }
  return 1.0;
}

}  // namespace mksim::sim
