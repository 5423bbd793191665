// replay_in_child: fork, replay in the child, JSON through a pipe, waitpid. The child leaves with _exit so
// that nothing of the parent's (buffers, atexit handlers, SimGrid's teardown) runs twice.
#include "sim/engine/isolate.hpp"

#include "sim/engine/noise.hpp"

#include "sim/engine/load.hpp"
#include "skeletons/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
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
  ChildResult r;
  try {
    r = run_in_child(
        [&] {
          ReplayOptions o = options;
          o.warnings = nullptr;
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

}  // namespace mksim::sim
