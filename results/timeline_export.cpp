// The Paje export of a timeline (see timeline_export.hpp): event definitions first, then the containers, then the
// states' push/pop events merged over ranks in time order, as Paje requires.
#include "results/timeline_export.hpp"

#include "results/hdf5_common.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <queue>
#include <map>
#include <stdexcept>
#include <vector>

namespace mksim::results {
namespace {

/** @brief The event definitions: the field names and types are Paje's (PajeNG's pj_dump checks them). */
constexpr const char* HEADER =
    "%EventDef PajeDefineContainerType 0\n%  Alias string\n%  Type string\n%  Name string\n%EndEventDef\n"
    "%EventDef PajeDefineStateType 1\n%  Alias string\n%  Type string\n%  Name string\n%EndEventDef\n"
    "%EventDef PajeDefineEntityValue 2\n%  Alias string\n%  Type string\n%  Name string\n%  Color color\n%EndEventDef\n"
    "%EventDef PajeCreateContainer 3\n%  Time date\n%  Alias string\n%  Type string\n%  Container string\n"
    "%  Name string\n%EndEventDef\n"
    "%EventDef PajeDestroyContainer 4\n%  Time date\n%  Type string\n%  Name string\n%EndEventDef\n"
    "%EventDef PajePushState 5\n%  Time date\n%  Type string\n%  Container string\n%  Value string\n%EndEventDef\n"
    "%EventDef PajePopState 6\n%  Time date\n%  Type string\n%  Container string\n%EndEventDef\n";

/** @brief A kind's colour ("r g b" in 0..1) by class: compute, send, receive, wait, anything else (collectives). */
const char* color_of(const std::string& kind) {
  if (kind == "compute") return "0.30 0.47 0.66";
  if (kind == "send" || kind == "isend") return "0.96 0.52 0.09";
  if (kind == "recv" || kind == "irecv") return "0.33 0.63 0.29";
  if (kind == "wait" || kind == "waitall") return "0.89 0.34 0.34";
  return "0.70 0.47 0.64";  // collectives and the rest
}

/** @brief A Paje string field: quoted, with characters that would end it replaced. */
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += (c == '"' || c == '\n' || c == '\r') ? '\'' : c;
  return out + "\"";
}

std::string date(double t) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9f", t);
  return buf;
}

struct Event {
  double time;
  int rank;
  bool push;
  std::string kind;
};

}  // namespace

PajeExport paje_trace(const Timeline& timeline, const std::string& name) {
  PajeExport out;
  // Ranks in order, each with its ops in file order (the CSV is sorted by rank, then start).
  std::map<int, std::vector<const TimelineOp*>> by_rank;
  std::map<std::string, std::string> values;  // kind -> alias
  double end = 0;
  for (const TimelineOp& op : timeline.ops) {
    by_rank[op.rank].push_back(&op);
    values.emplace(op.kind, "");
    end = std::max(end, op.end_s);
  }
  // Each rank's events as a properly nested push/pop sequence in time order.
  std::vector<std::vector<Event>> sequences;
  for (auto& [rank, ops] : by_rank) {
    std::stable_sort(ops.begin(), ops.end(), [](const TimelineOp* a, const TimelineOp* b) { return a->start_s < b->start_s; });
    std::vector<Event> seq;
    std::vector<double> open;  // end times of the pushed states, innermost last
    for (const TimelineOp* op : ops) {
      while (!open.empty() && open.back() <= op->start_s) {
        seq.push_back({open.back(), rank, false, ""});
        open.pop_back();
      }
      double stop = op->end_s;
      if (!open.empty() && stop > open.back()) {
        stop = open.back();
        ++out.clamped;
      }
      seq.push_back({op->start_s, rank, true, op->kind});
      open.push_back(stop);
      ++out.states;
    }
    while (!open.empty()) {
      seq.push_back({open.back(), rank, false, ""});
      open.pop_back();
    }
    sequences.push_back(std::move(seq));
  }

  std::string& t = out.text;
  t = std::string("# Paje trace of ") + name + ", written by mksim (one container per rank, one state per operation)\n";
  t += HEADER;
  t += "0 CT_Program 0 \"Program\"\n0 CT_Rank CT_Program \"Rank\"\n1 ST_Op CT_Rank \"Operation\"\n";
  int next = 0;
  for (auto& [kind, alias] : values) {
    alias = "V" + std::to_string(next++);
    t += "2 " + alias + " ST_Op " + quoted(kind) + " \"" + color_of(kind) + "\"\n";
  }
  t += "3 " + date(0) + " C_Program CT_Program 0 " + quoted(name) + "\n";
  for (const auto& [rank, ops] : by_rank)
    t += "3 " + date(0) + " R" + std::to_string(rank) + " CT_Rank C_Program \"rank " + std::to_string(rank) + "\"\n";
  out.containers = by_rank.size() + 1;

  // Merge the ranks' sequences by time (ties: lower rank first; each sequence keeps its own order).
  using Head = std::pair<double, std::size_t>;  // the time of a sequence's next event, the sequence
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<std::size_t> at(sequences.size(), 0);
  for (std::size_t s = 0; s < sequences.size(); ++s)
    if (!sequences[s].empty()) heads.emplace(sequences[s].front().time, s);
  while (!heads.empty()) {
    const std::size_t s = heads.top().second;
    heads.pop();
    const Event& e = sequences[s][at[s]++];
    const std::string container = "R" + std::to_string(e.rank);
    if (e.push) t += "5 " + date(e.time) + " ST_Op " + container + " " + values.at(e.kind) + "\n";
    else t += "6 " + date(e.time) + " ST_Op " + container + "\n";
    if (at[s] < sequences[s].size()) heads.emplace(sequences[s][at[s]].time, s);
  }
  for (const auto& [rank, ops] : by_rank) t += "4 " + date(end) + " CT_Rank R" + std::to_string(rank) + "\n";
  t += "4 " + date(end) + " CT_Program C_Program\n";
  return out;
}

PajeExport write_paje(const std::string& path, const Timeline& timeline, const std::string& name) {
  PajeExport out = paje_trace(timeline, name);
  detail::write_atomically(path, [&](const std::string& temporary) {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << out.text;
    file.flush();
    if (!file) throw std::runtime_error(path + ": cannot write " + temporary);
  });
  return out;
}

}  // namespace mksim::results
