// Configuration, output parsing, and the fork/exec of mpirun for one microbenchmark kernel.
#include "calibration/driver.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>

namespace mksim::calibration {
namespace {

constexpr std::uint64_t KIB = 1024;

std::string join(const std::vector<std::uint64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

template <class T>
bool parse_number(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

BenchConfig default_config(bool quick, std::uint64_t max_size_bytes, std::uint64_t eager_max_bytes, int np) {
  BenchConfig c;
  c.np = np;
  if (quick) {
    c.reps = 5;
    c.warmup = 1;
    c.min_rep_time_s = 1e-4;
    for (std::uint64_t s = 1; s <= std::min<std::uint64_t>(max_size_bytes, 256 * KIB); s *= 8)
      c.message_sizes.push_back(s);
    c.working_set_sizes = {16 * KIB, 1024 * KIB, 32 * 1024 * KIB};
  } else {
    for (std::uint64_t s = 1; s <= max_size_bytes; s *= 2) {
      c.message_sizes.push_back(s);
      const std::uint64_t between = s + s / 2;
      if (s >= KIB && between <= 256 * KIB && between <= max_size_bytes) c.message_sizes.push_back(between);
    }
    for (std::uint64_t s = 4 * KIB; s <= 64 * 1024 * KIB; s *= 2) {
      c.working_set_sizes.push_back(s);
      if (s < 64 * 1024 * KIB) c.working_set_sizes.push_back(s + s / 2);
    }
  }
  for (std::uint64_t s : c.message_sizes)
    if (s <= eager_max_bytes) c.eager_sizes.push_back(s);
  return c;
}

std::string describe(const BenchConfig& c) {
  std::ostringstream out;
  out << "np=" << c.np << " reps=" << c.reps << " warmup=" << c.warmup << " min_rep_time_s=" << c.min_rep_time_s
      << " message_sizes=" << join(c.message_sizes) << " eager_sizes=" << join(c.eager_sizes)
      << " working_set_sizes=" << join(c.working_set_sizes);
  return out.str();
}

std::vector<std::uint64_t> sizes_for(const BenchConfig& config, Kernel kernel) {
  switch (size_list_of(kernel)) {
    case SizeList::MESSAGE: return config.message_sizes;
    case SizeList::EAGER: return config.eager_sizes;
    case SizeList::WORKING_SET: return config.working_set_sizes;
    case SizeList::NONE: break;
  }
  return {0};
}

MicrobenchOutput parse_microbench_output(Kernel expected, const std::string& text) {
  const std::string name = kernel_name(expected);
  MicrobenchOutput out;
  out.kernel = expected;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  bool header = false, done = false;
  const auto error = [&](const std::string& what) {
    return ParseError("kernel " + name + ": line " + std::to_string(number) + ": " + what + ": '" + line + "'");
  };
  while (std::getline(in, line)) {
    ++number;
    const std::vector<std::string> w = split_words(line);
    if (w.empty()) continue;
    if (done) throw error("text after 'done'");
    if (!header) {
      if (w.size() != 2 || w[0] != "mkcalib-microbench") throw error("expected the header 'mkcalib-microbench 1'");
      if (w[1] != "1") throw error("unsupported output version " + w[1]);
      header = true;
    } else if (w[0] == "meta") {
      if (w.size() < 3) throw error("meta line without a value");
      const std::string value = line.substr(line.find(w[1]) + w[1].size() + 1);
      if (w[1] == "kernel") {
        if (w[2] != name) throw error("output of kernel '" + w[2] + "'");
      } else if (w[1] == "np") {
        if (!parse_number(w[2], out.np) || out.np < 1) throw error("bad rank count");
      } else if (w[1] == "unit") {
        out.unit = w[2];
      } else if (w[1] == "hostname") {
        out.hostname = w[2];
      } else if (w[1] == "mpi_library") {
        out.mpi_library = value;
      }  // other meta keys: ignored (later versions may add some)
    } else if (w[0] == "m") {
      RawSize s;
      if (w.size() < 4) throw error("a measurement needs a size, an iteration count and at least one time");
      if (!parse_number(w[1], s.size_bytes)) throw error("bad size '" + w[1] + "'");
      if (!parse_number(w[2], s.iterations) || s.iterations == 0) throw error("bad iteration count '" + w[2] + "'");
      for (std::size_t i = 3; i < w.size(); ++i) {
        double t = 0;
        if (!parse_number(w[i], t) || !(t >= 0) || t > 1e9) throw error("bad time '" + w[i] + "'");
        s.times_s.push_back(t);
      }
      if (!out.sizes.empty() && (s.times_s.size() != out.sizes.front().times_s.size()))
        throw error("repetition count differs from the first size's");
      out.sizes.push_back(std::move(s));
    } else if (w[0] == "done") {
      std::size_t count = 0;
      if (w.size() != 3 || w[1] != name || !parse_number(w[2], count)) throw error("malformed 'done' line");
      if (count != out.sizes.size())
        throw error("'done' counts " + std::to_string(count) + " sizes but " + std::to_string(out.sizes.size()) +
                    " were read");
      done = true;
    } else {
      throw error("unknown record '" + w[0] + "'");
    }
  }
  if (!header) throw ParseError("kernel " + name + ": no output (expected the header 'mkcalib-microbench 1')");
  if (!done)
    throw ParseError("kernel " + name + ": output ends at line " + std::to_string(number) +
                     " before 'done' (the run was cut short)");
  if (out.np == 0 || out.unit.empty()) throw ParseError("kernel " + name + ": missing 'meta np' or 'meta unit'");
  return out;
}

std::vector<std::string> microbench_command(const Launcher& launcher, const BenchConfig& config, Kernel kernel) {
  std::vector<std::string> cmd = {launcher.mpirun, "--oversubscribe", "-np", std::to_string(config.np)};
  cmd.insert(cmd.end(), launcher.mpirun_args.begin(), launcher.mpirun_args.end());
  std::ostringstream min_time;
  min_time << config.min_rep_time_s;
  const std::vector<std::string> program = {launcher.microbench, "--kernel", kernel_name(kernel), "--sizes",
                                            join(sizes_for(config, kernel)), "--reps", std::to_string(config.reps),
                                            "--warmup", std::to_string(config.warmup), "--min-time", min_time.str()};
  cmd.insert(cmd.end(), program.begin(), program.end());
  return cmd;
}

MicrobenchOutput run_microbench(const Launcher& launcher, const BenchConfig& config, Kernel kernel) {
  const std::string what = std::string("kernel ") + kernel_name(kernel);
  const std::vector<std::string> cmd = microbench_command(launcher, config, kernel);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error(what + ": pipe: " + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error(what + ": pipe: " + std::strerror(e));
  }
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The environment is built before fork: the child may only make async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "OMPI_ALLOW_RUN_AS_ROOT", 22) != 0) env_strings.emplace_back(*e);
  env_strings.emplace_back("OMPI_ALLOW_RUN_AS_ROOT=1");  // OpenMPI refuses to run as root without both
  env_strings.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw std::runtime_error(what + ": cannot fork: " + std::strerror(e));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec. mpirun dies with us (and takes its ranks along).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "mkcalib: cannot execute mpirun\n";
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  std::string out, err;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  const auto tail = [&err] {
    std::string t = err.size() > 2000 ? "..." + err.substr(err.size() - 2000) : err;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t.empty() ? std::string() : "\n" + t;
  };
  if (WIFSIGNALED(status))
    throw std::runtime_error(what + ": " + cmd[0] + " killed by signal " + std::to_string(WTERMSIG(status)) + tail());
  if (WEXITSTATUS(status) == 127)
    throw std::runtime_error(what + ": cannot run '" + cmd[0] + "' (is OpenMPI installed?)" + tail());
  if (WEXITSTATUS(status) != 0)
    throw std::runtime_error(what + ": " + cmd[0] + " exited with code " + std::to_string(WEXITSTATUS(status)) + tail());
  MicrobenchOutput parsed = parse_microbench_output(kernel, out);
  if (parsed.np != config.np)
    throw ParseError(what + ": ran on " + std::to_string(parsed.np) + " ranks, asked for " + std::to_string(config.np));
  return parsed;
}

}  // namespace mksim::calibration
