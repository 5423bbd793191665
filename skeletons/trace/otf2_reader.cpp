// Reader of OTF2 archives (README.md, "OTF2 import"): global definitions first (clock, regions, locations,
// groups, communicators, calling contexts), then the events of each rank's MPI location, replayed call by
// call: the records between the Enter and Leave of an MPI_* region become the events of that call.
#include "skeletons/trace/otf2_reader.hpp"

#include <otf2/otf2.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace mksim::trace {

namespace {

namespace fs = std::filesystem;

// ---------- OTF2's error messages ----------

// libotf2 reports errors through one process-wide callback (stderr by default), each error as a chain of
// messages from where it happened outwards; it is replaced once by one that keeps, for the calling thread,
// the first message (the cause, with its error's description) and the last one.
struct Otf2Messages {
  std::string first, last;
  void clear() { first.clear(), last.clear(); }
  std::string take() {
    std::string s = first.empty() ? std::string("no message from libotf2") : first;
    if (!last.empty()) s += "; " + last;
    clear();
    return s;
  }
};
thread_local Otf2Messages otf2_messages;

OTF2_ErrorCode keep_otf2_message(void*, const char*, uint64_t, const char*, OTF2_ErrorCode code, const char* format,
                                 va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  if (otf2_messages.first.empty())
    otf2_messages.first = std::string(OTF2_Error_GetDescription(code)) + ": " + text;
  else
    otf2_messages.last = text;
  return code;
}

void capture_otf2_messages() {
  static std::once_flag once;
  std::call_once(once, [] { OTF2_Error_RegisterCallback(keep_otf2_message, nullptr); });
  otf2_messages.clear();
}

// "INVALID_DATA: <what libotf2 said>"
std::string otf2_error(OTF2_ErrorCode code) {
  return std::string(OTF2_Error_GetName(code)) + ": " + otf2_messages.take();
}

std::string otf2_said() { return otf2_messages.take(); }

// ---------- global definitions ----------

struct RegionDef {
  OTF2_StringRef name;
  uint32_t line;
};

struct LocationDef {
  OTF2_LocationType type;
  uint64_t events;
};

struct GroupDef {
  OTF2_GroupType type;
  OTF2_Paradigm paradigm;
  OTF2_GroupFlag flags;
  std::vector<uint64_t> members;
};

struct CommDef {
  OTF2_StringRef name;
  OTF2_GroupRef group;
  OTF2_GroupRef other = OTF2_UNDEFINED_GROUP;  // intercommunicators: the second group
  OTF2_CommRef parent;
  bool inter = false;
};

struct ContextDef {
  OTF2_RegionRef region;
  OTF2_SourceCodeLocationRef where;
  OTF2_CallingContextRef parent;
};

// What the events need from the global definitions (the rest is not read).
struct Definitions {
  std::string file;  // the global definitions file, for errors
  std::optional<TraceError> error;
  bool clock = false;
  uint64_t resolution = 0;  // ticks per second
  uint64_t offset = 0;      // tick of the trace's time origin
  std::map<OTF2_StringRef, std::string> strings;
  std::map<OTF2_RegionRef, RegionDef> regions;
  std::map<OTF2_LocationRef, LocationDef> locations;
  std::map<OTF2_GroupRef, GroupDef> groups;
  std::map<OTF2_CommRef, CommDef> comms;
  std::map<OTF2_CallingContextRef, ContextDef> contexts;
  std::map<OTF2_SourceCodeLocationRef, uint32_t> lines;
  std::map<OTF2_CommRef, int> cart_dims;  // number of dimensions of a Cartesian communicator
  std::map<OTF2_CommRef, std::vector<OTF2_CartDimensionRef>> cart_topology;  // its dimensions
  std::map<OTF2_CartDimensionRef, std::pair<uint32_t, bool>> cart_dimensions;  // size, periodic
  OTF2_GroupRef mpi_locations = OTF2_UNDEFINED_GROUP;

  const std::string& text(OTF2_StringRef ref) const {
    static const std::string none;
    auto it = strings.find(ref);
    return it == strings.end() ? none : it->second;
  }
  [[noreturn]] void fail(const std::string& message) const { throw TraceError(file, TraceError::NO_OFFSET, message); }
};

// Runs a definition callback's body; an exception becomes Definitions::error and stops the reading.
template <typename F>
OTF2_CallbackCode on_definition(void* user, F&& body) {
  auto& d = *static_cast<Definitions*>(user);
  try {
    body(d);
    return OTF2_CALLBACK_SUCCESS;
  } catch (const TraceError& e) {
    d.error = e;
  } catch (const std::exception& e) {
    d.error = TraceError(d.file, TraceError::NO_OFFSET, e.what());
  }
  return OTF2_CALLBACK_INTERRUPT;
}

void register_definitions(OTF2_GlobalDefReaderCallbacks* cb) {
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(
      cb, [](void* u, uint64_t resolution, uint64_t offset, uint64_t, uint64_t) {
        return on_definition(u, [&](Definitions& d) {
          if (resolution == 0) d.fail("clock properties with a timer resolution of 0 ticks per second");
          d.clock = true;
          d.resolution = resolution;
          d.offset = offset;
        });
      });
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, [](void* u, OTF2_StringRef self, const char* s) {
    return on_definition(u, [&](Definitions& d) { d.strings[self] = s ? s : ""; });
  });
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(
      cb, [](void* u, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef, OTF2_StringRef, OTF2_RegionRole,
             OTF2_Paradigm, OTF2_RegionFlag, OTF2_StringRef, uint32_t begin, uint32_t) {
        return on_definition(u, [&](Definitions& d) {
          d.regions[self] = {name, begin == OTF2_UNDEFINED_UINT32 ? 0 : begin};
        });
      });
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(
      cb, [](void* u, OTF2_LocationRef self, OTF2_StringRef, OTF2_LocationType type, uint64_t events,
             OTF2_LocationGroupRef) {
        return on_definition(u, [&](Definitions& d) { d.locations[self] = {type, events}; });
      });
  OTF2_GlobalDefReaderCallbacks_SetGroupCallback(
      cb, [](void* u, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type, OTF2_Paradigm paradigm,
             OTF2_GroupFlag flags, uint32_t n, const uint64_t* members) {
        return on_definition(u, [&](Definitions& d) {
          GroupDef g{type, paradigm, flags, {}};
          if (n > 0 && members) g.members.assign(members, members + n);
          if (type == OTF2_GROUP_TYPE_COMM_LOCATIONS && paradigm == OTF2_PARADIGM_MPI) {
            if (d.mpi_locations != OTF2_UNDEFINED_GROUP)
              d.fail("two MPI locations groups (" + std::to_string(d.mpi_locations) + " and " + std::to_string(self) +
                     ")");
            d.mpi_locations = self;
          }
          d.groups[self] = std::move(g);
        });
      });
  OTF2_GlobalDefReaderCallbacks_SetCommCallback(
      cb, [](void* u, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef parent, OTF2_CommFlag) {
        return on_definition(u, [&](Definitions& d) { d.comms[self] = {name, group, OTF2_UNDEFINED_GROUP, parent}; });
      });
  OTF2_GlobalDefReaderCallbacks_SetInterCommCallback(
      cb, [](void* u, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef a, OTF2_GroupRef b, OTF2_CommRef parent,
             OTF2_CommFlag) {
        return on_definition(u, [&](Definitions& d) { d.comms[self] = {name, a, b, parent, true}; });
      });
  OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback(
      cb, [](void* u, OTF2_CallingContextRef self, OTF2_RegionRef region, OTF2_SourceCodeLocationRef where,
             OTF2_CallingContextRef parent) {
        return on_definition(u, [&](Definitions& d) { d.contexts[self] = {region, where, parent}; });
      });
  OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(
      cb, [](void* u, OTF2_SourceCodeLocationRef self, OTF2_StringRef, uint32_t line) {
        return on_definition(u, [&](Definitions& d) { d.lines[self] = line == OTF2_UNDEFINED_UINT32 ? 0 : line; });
      });
  OTF2_GlobalDefReaderCallbacks_SetCartTopologyCallback(
      cb, [](void* u, OTF2_CartTopologyRef, OTF2_StringRef, OTF2_CommRef comm, uint8_t dims,
             const OTF2_CartDimensionRef* refs) {
        return on_definition(u, [&](Definitions& d) {
          d.cart_dims[comm] = dims;
          if (refs) d.cart_topology[comm].assign(refs, refs + dims);
        });
      });
  OTF2_GlobalDefReaderCallbacks_SetCartDimensionCallback(
      cb, [](void* u, OTF2_CartDimensionRef self, OTF2_StringRef, uint32_t size, OTF2_CartPeriodicity periodic) {
        return on_definition(u, [&](Definitions& d) { d.cart_dimensions[self] = {size, periodic == OTF2_CART_PERIODIC_TRUE}; });
      });
}

// MPI_COMM_WORLD: the first communicator without parent whose group is the ranks 0..P-1 in order (or all P
// ranks, named without translation).
OTF2_CommRef find_world(const Definitions& d, std::size_t P) {
  for (const auto& [ref, c] : d.comms) {
    if (c.inter || c.parent != OTF2_UNDEFINED_COMM) continue;
    auto g = d.groups.find(c.group);
    if (g == d.groups.end() || g->second.paradigm != OTF2_PARADIGM_MPI) continue;
    if (g->second.type == OTF2_GROUP_TYPE_COMM_LOCATIONS) return ref;
    if (g->second.type != OTF2_GROUP_TYPE_COMM_GROUP || g->second.members.size() != P) continue;
    if (g->second.flags & OTF2_GROUP_FLAG_GLOBAL_MEMBERS) return ref;
    bool identity = true;
    for (std::size_t i = 0; i < P; ++i) identity = identity && g->second.members[i] == i;
    if (identity) return ref;
  }
  return OTF2_UNDEFINED_COMM;
}

// ---------- events of one location ----------

// An MPI record seen between the Enter and Leave of an MPI call.
struct Rec {
  enum Type : std::uint8_t {
    SEND, ISEND, RECV, IRECV_REQUEST, ISEND_COMPLETE, IRECV, REQUEST_TEST, COLL_BEGIN, COLL_END, COMM_CREATE,
    COMM_DESTROY, TYPES
  };
  Type type;
  uint64_t pos;
  uint32_t rank = 0;  // receiver, sender or root: a rank of `comm`
  OTF2_CommRef comm = OTF2_UNDEFINED_COMM;
  uint32_t tag = 0;
  uint64_t bytes = 0;     // message length, or the collective's bytes sent
  uint64_t received = 0;  // the collective's bytes received
  uint64_t request = 0;
  OTF2_CollectiveOp op = 0;
};

constexpr std::array<const char*, Rec::TYPES> REC_NAMES = {
    "MpiSend", "MpiIsend", "MpiRecv", "MpiIrecvRequest", "MpiIsendComplete", "MpiIrecv", "MpiRequestTest",
    "MpiCollectiveBegin", "MpiCollectiveEnd", "CommCreate", "CommDestroy"};

constexpr std::array<const char*, 23> OP_NAMES = {
    "BARRIER", "BCAST", "GATHER", "GATHERV", "SCATTER", "SCATTERV", "ALLGATHER", "ALLGATHERV", "ALLTOALL",
    "ALLTOALLV", "ALLTOALLW", "ALLREDUCE", "REDUCE", "REDUCE_SCATTER", "SCAN", "EXSCAN", "REDUCE_SCATTER_BLOCK",
    "CREATE_HANDLE", "DESTROY_HANDLE", "ALLOCATE", "DEALLOCATE", "CREATE_HANDLE_AND_ALLOCATE",
    "DESTROY_HANDLE_AND_DEALLOCATE"};

std::string op_name(OTF2_CollectiveOp op) {
  return op < OP_NAMES.size() ? OP_NAMES[op] : "operation " + std::to_string(op);
}

// The kind of a collective operation, if the event model has one.
std::optional<Kind> collective_kind(OTF2_CollectiveOp op) {
  switch (op) {
    case OTF2_COLLECTIVE_OP_BARRIER: return Kind::BARRIER;
    case OTF2_COLLECTIVE_OP_BCAST: return Kind::BCAST;
    case OTF2_COLLECTIVE_OP_GATHER: return Kind::GATHER;
    case OTF2_COLLECTIVE_OP_GATHERV: return Kind::GATHERV;
    case OTF2_COLLECTIVE_OP_SCATTER: return Kind::SCATTER;
    case OTF2_COLLECTIVE_OP_SCATTERV: return Kind::SCATTERV;
    case OTF2_COLLECTIVE_OP_ALLGATHER: return Kind::ALLGATHER;
    case OTF2_COLLECTIVE_OP_ALLGATHERV: return Kind::ALLGATHERV;
    case OTF2_COLLECTIVE_OP_ALLTOALL: return Kind::ALLTOALL;
    case OTF2_COLLECTIVE_OP_ALLTOALLV: return Kind::ALLTOALLV;
    case OTF2_COLLECTIVE_OP_ALLREDUCE: return Kind::ALLREDUCE;
    case OTF2_COLLECTIVE_OP_REDUCE: return Kind::REDUCE;
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER: return Kind::REDUCE_SCATTER;
    case OTF2_COLLECTIVE_OP_SCAN: return Kind::SCAN;
    case OTF2_COLLECTIVE_OP_EXSCAN: return Kind::EXSCAN;
    default: return std::nullopt;
  }
}

// Communicator bookkeeping operations (communicators, windows): no data moves.
bool is_handle_op(OTF2_CollectiveOp op) { return op >= OTF2_COLLECTIVE_OP_CREATE_HANDLE; }

// The kind of an MPI function by its name ("MPI_Send" -> SEND), for the functions the tracer records.
std::optional<Kind> mpi_kind(const std::string& name) {
  static const std::map<std::string, Kind, std::less<>> kinds = [] {
    std::map<std::string, Kind, std::less<>> m;
#define MKSIM_TRACE_KIND(name, code, text) \
  if (std::string_view(text).starts_with("MPI_")) m.emplace(text, Kind::name);
    MKTRACE_KINDS(MKSIM_TRACE_KIND)
#undef MKSIM_TRACE_KIND
    return m;
  }();
  auto it = kinds.find(name);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

bool is_wait_or_test(Kind k) {
  return k == Kind::WAIT || k == Kind::WAITALL || k == Kind::WAITANY || k == Kind::WAITSOME || k == Kind::TEST ||
         k == Kind::TESTALL || k == Kind::TESTANY || k == Kind::TESTSOME;
}

constexpr std::size_t MAX_CONTEXT_DEPTH = 4096;

struct StackEntry {
  OTF2_RegionRef region;
  bool mpi;
  OTF2_CallingContextRef context;  // OTF2_UNDEFINED_CALLING_CONTEXT for Enter records
};

struct Call {
  std::string name;
  std::optional<Kind> kind;  // none: an MPI function the event model does not record
  uint64_t enter;            // tick
  uint64_t pos;
  std::size_t depth;  // stack size with the call's own region on it
  std::uint64_t site;
  std::vector<Rec> recs;
};

struct Pending {
  std::uint32_t id;
  std::size_t event;  // index of the ISEND/IRECV event
  bool recv;
};

struct Ticks {
  uint64_t enter, exit;
  bool zero;  // INIT: times 0 as in the binary traces
};

// Replays the records of one location into a RankTrace.
class LocationReader {
 public:
  LocationReader(const Definitions& defs, std::string file, OTF2_LocationRef location, int rank, int P,
                 OTF2_CommRef world)
      : defs_(defs), file_(std::move(file)), location_(location), rank_(rank), P_(P), world_(world) {
    t_.file = file_;
    t_.rank = rank;
    t_.world_size = P;
    t_.status = Status::INCOMPLETE;
    t_.flags = MKTRACE_FLAG_WTIME_GLOBAL;
    t_.tick_s = 1.0 / static_cast<double>(defs.resolution);
  }

  const std::string& file() const { return file_; }
  const std::optional<TraceError>& error() const { return error_; }
  const std::vector<std::string>& command() const { return command_; }

  // Runs a record's handler: checks the time order, turns an exception into error() and stops the reading.
  template <typename F>
  OTF2_CallbackCode on_record(uint64_t pos, OTF2_TimeStamp time, F&& body) {
    if (error_) return OTF2_CALLBACK_INTERRUPT;
    try {
      if (seen_ && time < last_)
        fail(pos, "time " + std::to_string(time) + " is before the previous record's " + std::to_string(last_));
      if (!seen_) first_ = time;
      seen_ = true;
      last_ = time;
      body();
      return OTF2_CALLBACK_SUCCESS;
    } catch (const TraceError& e) {
      error_ = e;
    } catch (const std::exception& e) {
      error_ = TraceError(file_, TraceError::NO_OFFSET, where(pos) + e.what());
    }
    return OTF2_CALLBACK_INTERRUPT;
  }

  std::string where(uint64_t pos) const {
    return "location " + std::to_string(location_) + " (rank " + std::to_string(rank_) + "): event " +
           std::to_string(pos) + ": ";
  }
  [[noreturn]] void fail(uint64_t pos, const std::string& message) const {
    throw TraceError(file_, TraceError::NO_OFFSET, where(pos) + message);
  }

  void enter(uint64_t pos, uint64_t time, OTF2_RegionRef region, OTF2_CallingContextRef context) {
    const std::string& name = region_name(pos, region);
    const bool mpi = name.starts_with("MPI_");
    if (mpi && call_)
      fail(pos, "Enter of " + name + " inside " + call_->name + " (nested MPI calls are not supported)");
    std::uint64_t site = 0;
    if (mpi) site = context == OTF2_UNDEFINED_CALLING_CONTEXT ? stack_site() : context_site(pos, context);
    stack_.push_back({region, mpi, context});
    if (mpi) call_ = Call{name, mpi_kind(name), time, pos, stack_.size(), site, {}};
  }

  void leave(uint64_t pos, uint64_t time, OTF2_RegionRef region) {
    const std::string& name = region_name(pos, region);
    if (stack_.empty()) fail(pos, "Leave of " + name + " without an entered region");
    if (stack_.back().region != region)
      fail(pos, "Leave of " + name + ", but the innermost entered region is " +
                    defs_.text(defs_.regions.at(stack_.back().region).name));
    stack_.pop_back();
    if (call_ && stack_.size() < call_->depth) finish_call(pos, time);
  }

  OTF2_RegionRef context_region(uint64_t pos, OTF2_CallingContextRef context) const {
    auto it = defs_.contexts.find(context);
    if (it == defs_.contexts.end()) fail(pos, "undefined calling context " + std::to_string(context));
    return it->second.region;
  }

  void record(Rec r) {
    if (!call_) {
      if (r.type == Rec::COMM_CREATE || r.type == Rec::COMM_DESTROY) return;  // bookkeeping outside MPI calls
      fail(r.pos, std::string(REC_NAMES[r.type]) + " record outside an MPI_* region");
    }
    call_->recs.push_back(r);
  }

  void program_begin(OTF2_StringRef name, uint32_t n, const OTF2_StringRef* args) {
    command_.assign(1, defs_.text(name));
    for (uint32_t i = 0; i < n && args; ++i) command_.push_back(defs_.text(args[i]));
  }

  // The trace after the last record: status, problem (if any), times in seconds.
  RankTrace finish(std::optional<std::string>& problem) {
    if (call_ && call_->kind == Kind::ABORT) {
      emit(Kind::ABORT, *call_, call_->enter);
      t_.status = Status::ABORTED;
      problem = file_ + ": rank " + std::to_string(rank_) + ": MPI_Abort after " + std::to_string(t_.events.size()) +
                " events";
    } else if (t_.status != Status::FINALIZED) {
      std::string m = file_ + ": rank " + std::to_string(rank_) + ": incomplete: the trace ends ";
      m += call_ ? "inside " + call_->name : std::string("before MPI_Finalize");
      problem = m + "; " + std::to_string(t_.events.size()) + " events are a prefix of its calls";
    }
    const uint64_t t0 = init_end_ ? *init_end_ : first_;
    const double r = static_cast<double>(defs_.resolution);
    auto since = [&](uint64_t a, uint64_t b) {
      return a >= b ? static_cast<double>(a - b) / r : -static_cast<double>(b - a) / r;
    };
    t_.t0_s = since(t0, defs_.offset);
    for (std::size_t i = 0; i < t_.events.size(); ++i) {
      if (ticks_[i].zero) continue;
      t_.events[i].t_enter = since(ticks_[i].enter, t0);
      t_.events[i].t_exit = since(ticks_[i].exit, t0);
    }
    return std::move(t_);
  }

 private:
  const std::string& region_name(uint64_t pos, OTF2_RegionRef region) const {
    auto it = defs_.regions.find(region);
    if (it == defs_.regions.end()) fail(pos, "undefined region " + std::to_string(region));
    return defs_.text(it->second.name);
  }

  // the enclosing non-MPI regions, innermost first: (region name, its first line)
  std::uint64_t stack_site() {
    std::vector<Frame> frames;
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
      if (it->mpi) continue;
      const RegionDef& r = defs_.regions.at(it->region);
      frames.push_back({defs_.text(r.name), r.line});
    }
    return add_site(std::move(frames));
  }

  // the callers in a calling context, innermost first: (region name, line of the call)
  std::uint64_t context_site(uint64_t pos, OTF2_CallingContextRef context) {
    std::vector<Frame> frames;
    auto it = defs_.contexts.find(context);
    if (it == defs_.contexts.end()) fail(pos, "undefined calling context " + std::to_string(context));
    for (OTF2_CallingContextRef c = it->second.parent; c != OTF2_UNDEFINED_CALLING_CONTEXT;) {
      auto ct = defs_.contexts.find(c);
      if (ct == defs_.contexts.end()) fail(pos, "undefined calling context " + std::to_string(c));
      if (frames.size() == MAX_CONTEXT_DEPTH) fail(pos, "calling context " + std::to_string(context) + " is a cycle");
      auto line = defs_.lines.find(ct->second.where);
      frames.push_back({region_name(pos, ct->second.region), line == defs_.lines.end() ? 0 : line->second});
      c = ct->second.parent;
    }
    return add_site(std::move(frames));
  }

  std::uint64_t add_site(std::vector<Frame> frames) {
    const std::uint64_t h = site_hash(frames);
    if (h != 0 && !t_.sites.count(h)) t_.sites[h] = CallSite{h, std::move(frames)};
    return h;
  }

  std::size_t emit(Kind kind, const Call& c, uint64_t exit, std::int32_t peer = NO_RANK, std::int32_t tag = NO_RANK,
                   std::int64_t bytes = 0, std::uint32_t comm = 0, std::int32_t root = NO_RANK,
                   std::uint32_t request = 0) {
    Event e;
    e.kind = kind;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.comm = comm;
    e.root = root;
    e.request = request;
    e.site = c.site;
    t_.events.push_back(e);
    ticks_.push_back({c.enter, exit, kind == Kind::INIT || kind == Kind::INIT_THREAD});
    return t_.events.size() - 1;
  }

  const CommDef& comm_def(uint64_t pos, OTF2_CommRef comm) const {
    auto it = defs_.comms.find(comm);
    if (it == defs_.comms.end()) fail(pos, "undefined communicator " + std::to_string(comm));
    return it->second;
  }

  const GroupDef& group_def(uint64_t pos, OTF2_GroupRef group, OTF2_CommRef comm) const {
    auto it = defs_.groups.find(group);
    if (it == defs_.groups.end())
      fail(pos, "communicator " + std::to_string(comm) + " has an undefined group " + std::to_string(group));
    return it->second;
  }

  bool contains(const GroupDef& g) const {
    if (g.type == OTF2_GROUP_TYPE_COMM_SELF || g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS) return true;
    for (uint64_t m : g.members)
      if (m == static_cast<uint64_t>(rank_)) return true;
    return false;
  }

  // The group whose ranks the records on `comm` name: its group, or an intercommunicator's remote group.
  const GroupDef& peer_group(uint64_t pos, OTF2_CommRef comm) const {
    const CommDef& c = comm_def(pos, comm);
    const GroupDef& a = group_def(pos, c.group, comm);
    if (!c.inter) return a;
    return contains(a) ? group_def(pos, c.other, comm) : a;
  }

  // MPI_COMM_WORLD rank of rank `local` of `comm`
  std::int32_t world_rank(uint64_t pos, OTF2_CommRef comm, uint32_t local) const {
    const GroupDef& g = peer_group(pos, comm);
    uint64_t w = local;
    switch (g.type) {
      case OTF2_GROUP_TYPE_COMM_LOCATIONS: break;
      case OTF2_GROUP_TYPE_COMM_SELF:
        if (local != 0) fail(pos, "rank " + std::to_string(local) + " of a self communicator");
        w = static_cast<uint64_t>(rank_);
        break;
      case OTF2_GROUP_TYPE_COMM_GROUP:
        if (g.flags & OTF2_GROUP_FLAG_GLOBAL_MEMBERS) break;
        if (local >= g.members.size())
          fail(pos, "rank " + std::to_string(local) + " is not in communicator " + std::to_string(comm) + " (" +
                        std::to_string(g.members.size()) + " ranks)");
        w = g.members[local];
        break;
      default:
        fail(pos, "communicator " + std::to_string(comm) + " has a group of type " + std::to_string(g.type) +
                      ", not a communicator group");
    }
    if (w >= static_cast<uint64_t>(P_))
      fail(pos, "rank " + std::to_string(local) + " of communicator " + std::to_string(comm) + " is world rank " +
                    std::to_string(w) + ", not one of 0.." + std::to_string(P_ - 1));
    return static_cast<std::int32_t>(w);
  }

  std::uint64_t comm_size(uint64_t pos, OTF2_CommRef comm) const {
    const GroupDef& g = group_def(pos, comm_def(pos, comm).group, comm);
    if (g.type == OTF2_GROUP_TYPE_COMM_SELF) return 1;
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS || g.members.empty()) return static_cast<std::uint64_t>(P_);
    return g.members.size();
  }

  // The communicator id of the event model: 0 world, then 1, 2, ... in order of creation or first use.
  std::uint32_t comm_id(uint64_t pos, OTF2_CommRef comm) {
    if (comm == world_) return 0;
    comm_def(pos, comm);
    auto [it, added] = comm_ids_.try_emplace(comm, next_comm_);
    if (added) ++next_comm_;
    return it->second;
  }

  std::uint32_t new_comm_id(uint64_t pos, OTF2_CommRef comm) {
    comm_def(pos, comm);
    comm_ids_[comm] = next_comm_;
    return next_comm_++;
  }

  // Checks that `c` holds only records of the given types, at most max[type] of each (-1: any number);
  // communicator bookkeeping (CommCreate/Destroy, handle collectives) is allowed where `handles` is set.
  void expect(const Call& c, std::array<int, Rec::TYPES> max, bool handles = false) const {
    std::array<int, Rec::TYPES> n{};
    for (const Rec& r : c.recs) {
      const bool handle = r.type == Rec::COMM_CREATE || r.type == Rec::COMM_DESTROY || r.type == Rec::COLL_BEGIN ||
                          (r.type == Rec::COLL_END && is_handle_op(r.op));
      if (handles && handle) continue;
      if (max[r.type] >= 0 && ++n[r.type] > max[r.type]) {
        std::string what = r.type == Rec::COLL_END ? " (" + op_name(r.op) + ")" : "";
        fail(r.pos, std::string(REC_NAMES[r.type]) + what + " record in " + c.name +
                        (c.kind ? std::string(max[r.type] == 0 ? ", which has none" : " (one too many)")
                                : std::string(", which mksim does not model (README.md, \"OTF2 import\")")));
      }
    }
  }

  static std::array<int, Rec::TYPES> allow(std::initializer_list<std::pair<Rec::Type, int>> types) {
    std::array<int, Rec::TYPES> max{};
    for (auto [t, n] : types) max[t] = n;
    return max;
  }

  const Rec* find(const Call& c, Rec::Type type) const {
    for (const Rec& r : c.recs)
      if (r.type == type) return &r;
    return nullptr;
  }

  void finish_call(uint64_t pos, uint64_t exit) {
    const Call c = std::move(*call_);
    call_.reset();
    if (!c.kind) {  // not a recorded MPI function: it may only manage communicators
      expect(c, allow({{Rec::REQUEST_TEST, -1}}), true);
      return;
    }
    const Kind k = *c.kind;
    switch (k) {
      case Kind::INIT:
      case Kind::INIT_THREAD:
        expect(c, allow({}), true);
        if (!init_end_) init_end_ = exit;
        emit(k, c, exit);
        return;
      case Kind::FINALIZE:
        expect(c, allow({}), true);
        emit(k, c, exit);
        t_.status = Status::FINALIZED;
        return;
      case Kind::ABORT:
        expect(c, allow({}), true);
        emit(k, c, exit);
        t_.status = Status::ABORTED;
        return;
      case Kind::SEND: case Kind::SSEND: case Kind::BSEND: case Kind::RSEND: case Kind::RECV: {
        const bool recv = k == Kind::RECV;
        const Rec::Type type = recv ? Rec::RECV : Rec::SEND;
        expect(c, allow({{type, 1}}));
        if (const Rec* r = find(c, type))
          emit(k, c, exit, world_rank(r->pos, r->comm, r->rank), static_cast<std::int32_t>(r->tag),
               static_cast<std::int64_t>(r->bytes), comm_id(r->pos, r->comm));
        else  // MPI_PROC_NULL: Score-P writes no message record
          emit(k, c, exit, PROC_NULL);
        return;
      }
      case Kind::ISEND: case Kind::ISSEND: {
        expect(c, allow({{Rec::ISEND, 1}}));
        const Rec* r = find(c, Rec::ISEND);
        if (!r) {
          emit(k, c, exit, PROC_NULL);
          return;
        }
        const std::size_t i = emit(k, c, exit, world_rank(r->pos, r->comm, r->rank), static_cast<std::int32_t>(r->tag),
                                   static_cast<std::int64_t>(r->bytes), comm_id(r->pos, r->comm), NO_RANK,
                                   next_request_);
        start_request(r->pos, r->request, i, false);
        return;
      }
      case Kind::IRECV: {
        expect(c, allow({{Rec::IRECV_REQUEST, 1}}));
        const Rec* r = find(c, Rec::IRECV_REQUEST);
        if (!r) {
          emit(k, c, exit, PROC_NULL);
          return;
        }
        // source, tag and size are only known at completion (the MpiIrecv record), filled in then
        const std::size_t i = emit(k, c, exit, NO_RANK, NO_RANK, 0, 0, NO_RANK, next_request_);
        start_request(r->pos, r->request, i, true);
        return;
      }
      case Kind::SENDRECV: {
        expect(c, allow({{Rec::SEND, 1}, {Rec::RECV, 1}}));
        const Rec* s = find(c, Rec::SEND);
        const Rec* r = find(c, Rec::RECV);
        if (s)
          emit(k, c, exit, world_rank(s->pos, s->comm, s->rank), static_cast<std::int32_t>(s->tag),
               static_cast<std::int64_t>(s->bytes), comm_id(s->pos, s->comm));
        else
          emit(k, c, exit, PROC_NULL);
        if (r)
          emit(Kind::COMPLETE, c, exit, world_rank(r->pos, r->comm, r->rank), static_cast<std::int32_t>(r->tag),
               static_cast<std::int64_t>(r->bytes), comm_id(r->pos, r->comm), 1);
        else
          emit(Kind::COMPLETE, c, exit, PROC_NULL, NO_RANK, 0, 0, 1);
        return;
      }
      case Kind::PROBE: case Kind::IPROBE:
        expect(c, allow({}));
        emit(k, c, exit, NO_RANK, NO_RANK, 0, 0, k == Kind::PROBE ? 1 : NO_RANK);
        return;
      case Kind::COMM_DUP: case Kind::COMM_SPLIT: case Kind::CART_CREATE: case Kind::COMM_FREE: case Kind::CART_SUB:
      case Kind::COMM_CREATE: case Kind::COMM_CREATE_GROUP: case Kind::GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE:
      case Kind::DIST_GRAPH_CREATE_ADJACENT:
        communicator_call(c, exit);
        return;
      case Kind::DIMS_CREATE: case Kind::CART_SHIFT:  // local: Score-P records no arguments for them
        expect(c, allow({}), true);
        emit(k, c, exit);
        return;
      default:
        break;
    }
    if (is_wait_or_test(k)) {
      expect(c, allow({{Rec::ISEND_COMPLETE, -1}, {Rec::IRECV, -1}, {Rec::REQUEST_TEST, -1}}));
      std::int32_t done = 0;
      for (const Rec& r : c.recs) done += r.type == Rec::ISEND_COMPLETE || r.type == Rec::IRECV;
      emit(k, c, exit, NO_RANK, NO_RANK, 0, 0, done);
      for (const Rec& r : c.recs)
        if (r.type == Rec::ISEND_COMPLETE || r.type == Rec::IRECV) complete(c, exit, r);
      return;
    }
    if (is_collective(k)) {
      collective(c, exit);
      return;
    }
    fail(pos, c.name + " is not an MPI call of the event model");  // kinds.h grew: map the new kind here
  }

  void start_request(uint64_t pos, uint64_t request, std::size_t event, bool recv) {
    if (pending_.count(request)) fail(pos, "request " + std::to_string(request) + " started again before completing");
    pending_[request] = {next_request_++, event, recv};
  }

  void complete(const Call& c, uint64_t exit, const Rec& r) {
    const bool recv = r.type == Rec::IRECV;
    auto it = pending_.find(r.request);
    if (it == pending_.end())
      fail(r.pos, std::string(REC_NAMES[r.type]) + " of request " + std::to_string(r.request) +
                      ", which no MPI_Isend/MPI_Irecv of this location started (or it completed already)");
    if (it->second.recv != recv)
      fail(r.pos, std::string(REC_NAMES[r.type]) + " of request " + std::to_string(r.request) + ", which is " +
                      (recv ? "a send" : "a receive"));
    const Pending p = it->second;
    pending_.erase(it);
    Event& started = t_.events[p.event];
    if (recv) {
      started.peer = world_rank(r.pos, r.comm, r.rank);
      started.tag = static_cast<std::int32_t>(r.tag);
      started.bytes = static_cast<std::int64_t>(r.bytes);
      started.comm = comm_id(r.pos, r.comm);
    }
    const Event s = started;
    emit(Kind::COMPLETE, c, exit, s.peer, s.tag, s.bytes, s.comm, recv ? 1 : 0, p.id);
  }

  void collective(const Call& c, uint64_t exit) {
    const Kind k = *c.kind;
    expect(c, allow({{Rec::COLL_BEGIN, 1}, {Rec::COLL_END, 1}}));
    const Rec* r = find(c, Rec::COLL_END);
    if (!r) fail(c.pos, c.name + " without an MpiCollectiveEnd record");
    if (collective_kind(r->op) != k) fail(r->pos, c.name + " with collective operation " + op_name(r->op));
    // Score-P's byte counts (scorep_mpi_coll_bytes_*, without MPI_IN_PLACE): back to the binary traces' bytes
    const std::uint64_t n = comm_size(r->pos, r->comm), sent = r->bytes, received = r->received;
    std::int32_t root = NO_RANK;
    if (k == Kind::BCAST || k == Kind::REDUCE || k == Kind::GATHER || k == Kind::GATHERV || k == Kind::SCATTER ||
        k == Kind::SCATTERV) {
      if (r->rank == OTF2_UNDEFINED_UINT32) fail(r->pos, c.name + " without a root");
      root = world_rank(r->pos, r->comm, r->rank);
    }
    std::uint64_t bytes = 0;
    switch (k) {
      case Kind::BCAST: bytes = received; break;
      case Kind::REDUCE: case Kind::GATHER: bytes = sent > 0 || n < 2 ? sent : received / (n - 1); break;
      case Kind::SCATTER: bytes = received > 0 || n < 2 ? received : sent / (n - 1); break;
      case Kind::SCATTERV: bytes = root == rank_ ? sent : received; break;
      case Kind::ALLREDUCE: case Kind::ALLGATHER: case Kind::ALLGATHERV: bytes = sent / n; break;
      case Kind::GATHERV: case Kind::ALLTOALL: case Kind::ALLTOALLV: case Kind::REDUCE_SCATTER: bytes = sent; break;
      default: break;  // BARRIER
    }
    emit(k, c, exit, NO_RANK, NO_RANK, static_cast<std::int64_t>(bytes), comm_id(r->pos, r->comm), root);
  }

  // COMM_DUP, COMM_SPLIT, CART_CREATE (root = the new communicator's id, comm = the parent's) and COMM_FREE
  void communicator_call(const Call& c, uint64_t exit) {
    const Kind k = *c.kind;
    const bool free = k == Kind::COMM_FREE;
    expect(c, allow({{Rec::COLL_BEGIN, 1}, {Rec::COLL_END, 1}, {free ? Rec::COMM_DESTROY : Rec::COMM_CREATE, 1}}));
    const Rec* end = find(c, Rec::COLL_END);
    const OTF2_CollectiveOp want = free ? OTF2_COLLECTIVE_OP_DESTROY_HANDLE : OTF2_COLLECTIVE_OP_CREATE_HANDLE;
    if (end && end->op != want) fail(end->pos, c.name + " with collective operation " + op_name(end->op));
    if (free) {
      const Rec* d = find(c, Rec::COMM_DESTROY);
      const Rec* r = d ? d : end;
      const std::uint32_t id = r ? comm_id(r->pos, r->comm) : 0;
      if (r) comm_ids_.erase(r->comm);
      emit(k, c, exit, NO_RANK, NO_RANK, 0, id);
      return;
    }
    const std::uint32_t parent = end ? comm_id(end->pos, end->comm) : 0;
    const Rec* created = find(c, Rec::COMM_CREATE);
    std::int32_t tag = NO_RANK;
    if (k == Kind::CART_CREATE && created) {
      auto dims = defs_.cart_dims.find(created->comm);
      if (dims != defs_.cart_dims.end()) tag = dims->second;
    }
    const std::int32_t id = created ? static_cast<std::int32_t>(new_comm_id(created->pos, created->comm)) : NO_RANK;
    const std::size_t i = emit(k, c, exit, NO_RANK, tag, 0, parent, id);
    if (created) creation_args(i, *created);
  }

  // The arguments the definitions give of a new communicator: its members (world ranks in its rank order),
  // this rank's rank and the size; for a Cartesian one its grid and periods. (Score-P has no split colour or
  // key: color is ANY, "not recorded".)
  void creation_args(std::size_t event, const Rec& created) {
    CommArgs a;
    a.color = ANY;
    const std::uint64_t n = comm_size(created.pos, created.comm);
    for (std::uint64_t r = 0; r < n; ++r) a.members.push_back(world_rank(created.pos, created.comm, static_cast<uint32_t>(r)));
    for (std::size_t r = 0; r < a.members.size(); ++r)
      if (a.members[r] == rank_) a.new_rank = static_cast<std::int32_t>(r);
    a.new_size = static_cast<std::int32_t>(a.members.size());
    if (auto topo = defs_.cart_topology.find(created.comm); topo != defs_.cart_topology.end())
      for (OTF2_CartDimensionRef d : topo->second) {
        auto dim = defs_.cart_dimensions.find(d);
        if (dim == defs_.cart_dimensions.end()) fail(created.pos, "undefined Cartesian dimension " + std::to_string(d));
        a.dims.push_back(static_cast<std::int32_t>(dim->second.first));
        a.periods.push_back(dim->second.second);
      }
    t_.args.push_back(std::move(a));
    t_.events[event].args = static_cast<std::uint32_t>(t_.args.size());
  }

  const Definitions& defs_;
  std::string file_;
  OTF2_LocationRef location_;
  int rank_, P_;
  OTF2_CommRef world_;
  RankTrace t_;
  std::vector<Ticks> ticks_;  // per event, converted to seconds at the end (t0 may come late)
  std::vector<StackEntry> stack_;
  std::optional<Call> call_;
  std::map<uint64_t, Pending> pending_;  // by OTF2 request id
  std::uint32_t next_request_ = 1;
  std::map<OTF2_CommRef, std::uint32_t> comm_ids_;
  std::uint32_t next_comm_ = 1;
  bool seen_ = false;
  uint64_t first_ = 0, last_ = 0;
  std::optional<uint64_t> init_end_;
  std::vector<std::string> command_;
  std::optional<TraceError> error_;
};

// ---------- event callbacks ----------

LocationReader& self(void* user) { return *static_cast<LocationReader*>(user); }

// A string as a template argument: the record name of a generic callback.
template <std::size_t N>
struct Name {
  char text[N];
  constexpr Name(const char (&s)[N]) {
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
};

template <Name name, typename... Args>
OTF2_CallbackCode reject(OTF2_LocationRef, OTF2_TimeStamp time, uint64_t pos, void* user, OTF2_AttributeList*,
                         Args...) {
  LocationReader& r = self(user);
  return r.on_record(pos, time, [&] {
    r.fail(pos, std::string(name.text) + " records are not supported (README.md, \"OTF2 import\")");
  });
}

template <typename... Args>
OTF2_CallbackCode skip(OTF2_LocationRef, OTF2_TimeStamp time, uint64_t pos, void* user, OTF2_AttributeList*,
                         Args...) {
  return self(user).on_record(pos, time, [] {});
}

// Deduce a generic callback's extra parameters from the callback type of a record.
template <Name name, typename... Args>
constexpr auto rejecting(OTF2_CallbackCode (*)(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void*, OTF2_AttributeList*,
                                               Args...)) {
  return &reject<name, Args...>;
}
template <typename... Args>
constexpr auto ignoring(OTF2_CallbackCode (*)(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void*, OTF2_AttributeList*,
                                              Args...)) {
  return &skip<Args...>;
}

#define MKSIM_OTF2_REJECT(cb, Record) \
  OTF2_EvtReaderCallbacks_Set##Record##Callback(cb, rejecting<#Record>(OTF2_EvtReaderCallback_##Record{}))
#define MKSIM_OTF2_IGNORE(cb, Record) \
  OTF2_EvtReaderCallbacks_Set##Record##Callback(cb, ignoring(OTF2_EvtReaderCallback_##Record{}))

void register_events(OTF2_EvtReaderCallbacks* cb) {
  using L = OTF2_LocationRef;
  using T = OTF2_TimeStamp;
  using A = OTF2_AttributeList*;
  OTF2_EvtReaderCallbacks_SetEnterCallback(cb, [](L, T time, uint64_t pos, void* u, A, OTF2_RegionRef region) {
    return self(u).on_record(pos, time, [&] { self(u).enter(pos, time, region, OTF2_UNDEFINED_CALLING_CONTEXT); });
  });
  OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, [](L, T time, uint64_t pos, void* u, A, OTF2_RegionRef region) {
    return self(u).on_record(pos, time, [&] { self(u).leave(pos, time, region); });
  });
  OTF2_EvtReaderCallbacks_SetCallingContextEnterCallback(
      cb, [](L, T time, uint64_t pos, void* u, A, OTF2_CallingContextRef context, uint32_t) {
        return self(u).on_record(pos, time, [&] {
          self(u).enter(pos, time, self(u).context_region(pos, context), context);
        });
      });
  OTF2_EvtReaderCallbacks_SetCallingContextLeaveCallback(
      cb, [](L, T time, uint64_t pos, void* u, A, OTF2_CallingContextRef context) {
        return self(u).on_record(pos, time, [&] { self(u).leave(pos, time, self(u).context_region(pos, context)); });
      });
  OTF2_EvtReaderCallbacks_SetMpiSendCallback(
      cb, [](L, T time, uint64_t pos, void* u, A, uint32_t to, OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
        return self(u).on_record(pos, time, [&] { self(u).record({Rec::SEND, pos, to, comm, tag, bytes}); });
      });
  OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, [](L, T time, uint64_t pos, void* u, A, uint32_t to,
                                                      OTF2_CommRef comm, uint32_t tag, uint64_t bytes, uint64_t req) {
    return self(u).on_record(pos, time, [&] { self(u).record({Rec::ISEND, pos, to, comm, tag, bytes, 0, req}); });
  });
  OTF2_EvtReaderCallbacks_SetMpiRecvCallback(
      cb, [](L, T time, uint64_t pos, void* u, A, uint32_t from, OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
        return self(u).on_record(pos, time, [&] { self(u).record({Rec::RECV, pos, from, comm, tag, bytes}); });
      });
  OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, [](L, T time, uint64_t pos, void* u, A, uint32_t from,
                                                      OTF2_CommRef comm, uint32_t tag, uint64_t bytes, uint64_t req) {
    return self(u).on_record(pos, time, [&] { self(u).record({Rec::IRECV, pos, from, comm, tag, bytes, 0, req}); });
  });
  OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, [](L, T time, uint64_t pos, void* u, A, uint64_t req) {
    return self(u).on_record(pos, time, [&] {
      self(u).record({Rec::IRECV_REQUEST, pos, 0, OTF2_UNDEFINED_COMM, 0, 0, 0, req});
    });
  });
  OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, [](L, T time, uint64_t pos, void* u, A, uint64_t req) {
    return self(u).on_record(pos, time, [&] {
      self(u).record({Rec::ISEND_COMPLETE, pos, 0, OTF2_UNDEFINED_COMM, 0, 0, 0, req});
    });
  });
  OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(cb, [](L, T time, uint64_t pos, void* u, A, uint64_t req) {
    return self(u).on_record(pos, time, [&] {
      self(u).record({Rec::REQUEST_TEST, pos, 0, OTF2_UNDEFINED_COMM, 0, 0, 0, req});
    });
  });
  OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, [](L, T time, uint64_t pos, void* u, A) {
    return self(u).on_record(pos, time, [&] { self(u).record({Rec::COLL_BEGIN, pos}); });
  });
  OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(
      cb, [](L, T time, uint64_t pos, void* u, A, OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root,
             uint64_t sent, uint64_t received) {
        return self(u).on_record(pos, time, [&] {
          self(u).record({Rec::COLL_END, pos, root, comm, 0, sent, received, 0, op});
        });
      });
  OTF2_EvtReaderCallbacks_SetCommCreateCallback(cb, [](L, T time, uint64_t pos, void* u, A, OTF2_CommRef comm) {
    return self(u).on_record(pos, time, [&] { self(u).record({Rec::COMM_CREATE, pos, 0, comm}); });
  });
  OTF2_EvtReaderCallbacks_SetCommDestroyCallback(cb, [](L, T time, uint64_t pos, void* u, A, OTF2_CommRef comm) {
    return self(u).on_record(pos, time, [&] { self(u).record({Rec::COMM_DESTROY, pos, 0, comm}); });
  });
  OTF2_EvtReaderCallbacks_SetProgramBeginCallback(
      cb, [](L, T time, uint64_t pos, void* u, A, OTF2_StringRef name, uint32_t n, const OTF2_StringRef* args) {
        return self(u).on_record(pos, time, [&] { self(u).program_begin(name, n, args); });
      });
  OTF2_EvtReaderCallbacks_SetUnknownCallback(cb, [](L, T time, uint64_t pos, void* u, A) {
    return self(u).on_record(pos, time, [&] {
      self(u).fail(pos, "unknown record (written by a newer OTF2 than " OTF2_VERSION "?)");
    });
  });

  // harmless: they do not change which MPI calls were made (README.md, "OTF2 import")
  MKSIM_OTF2_IGNORE(cb, ProgramEnd);
  MKSIM_OTF2_IGNORE(cb, BufferFlush);
  MKSIM_OTF2_IGNORE(cb, Metric);
  MKSIM_OTF2_IGNORE(cb, ParameterString);
  MKSIM_OTF2_IGNORE(cb, ParameterInt);
  MKSIM_OTF2_IGNORE(cb, ParameterUnsignedInt);
  MKSIM_OTF2_IGNORE(cb, CallingContextSample);
  MKSIM_OTF2_IGNORE(cb, OmpFork);
  MKSIM_OTF2_IGNORE(cb, OmpJoin);
  MKSIM_OTF2_IGNORE(cb, OmpAcquireLock);
  MKSIM_OTF2_IGNORE(cb, OmpReleaseLock);
  MKSIM_OTF2_IGNORE(cb, OmpTaskCreate);
  MKSIM_OTF2_IGNORE(cb, OmpTaskSwitch);
  MKSIM_OTF2_IGNORE(cb, OmpTaskComplete);
  MKSIM_OTF2_IGNORE(cb, ThreadFork);
  MKSIM_OTF2_IGNORE(cb, ThreadJoin);
  MKSIM_OTF2_IGNORE(cb, ThreadTeamBegin);
  MKSIM_OTF2_IGNORE(cb, ThreadTeamEnd);
  MKSIM_OTF2_IGNORE(cb, ThreadAcquireLock);
  MKSIM_OTF2_IGNORE(cb, ThreadReleaseLock);
  MKSIM_OTF2_IGNORE(cb, ThreadTaskCreate);
  MKSIM_OTF2_IGNORE(cb, ThreadTaskSwitch);
  MKSIM_OTF2_IGNORE(cb, ThreadTaskComplete);
  MKSIM_OTF2_IGNORE(cb, ThreadCreate);
  MKSIM_OTF2_IGNORE(cb, ThreadBegin);
  MKSIM_OTF2_IGNORE(cb, ThreadWait);
  MKSIM_OTF2_IGNORE(cb, ThreadEnd);
  MKSIM_OTF2_IGNORE(cb, IoCreateHandle);
  MKSIM_OTF2_IGNORE(cb, IoDestroyHandle);
  MKSIM_OTF2_IGNORE(cb, IoDuplicateHandle);
  MKSIM_OTF2_IGNORE(cb, IoSeek);
  MKSIM_OTF2_IGNORE(cb, IoChangeStatusFlags);
  MKSIM_OTF2_IGNORE(cb, IoDeleteFile);
  MKSIM_OTF2_IGNORE(cb, IoOperationBegin);
  MKSIM_OTF2_IGNORE(cb, IoOperationTest);
  MKSIM_OTF2_IGNORE(cb, IoOperationIssued);
  MKSIM_OTF2_IGNORE(cb, IoOperationComplete);
  MKSIM_OTF2_IGNORE(cb, IoOperationCancelled);
  MKSIM_OTF2_IGNORE(cb, IoAcquireLock);
  MKSIM_OTF2_IGNORE(cb, IoReleaseLock);
  MKSIM_OTF2_IGNORE(cb, IoTryLock);

  // the event model would silently miss communication or calls
  MKSIM_OTF2_REJECT(cb, MeasurementOnOff);
  MKSIM_OTF2_REJECT(cb, MpiRequestCancelled);
  MKSIM_OTF2_REJECT(cb, NonBlockingCollectiveRequest);
  MKSIM_OTF2_REJECT(cb, NonBlockingCollectiveComplete);
  MKSIM_OTF2_REJECT(cb, RmaWinCreate);
  MKSIM_OTF2_REJECT(cb, RmaWinDestroy);
  MKSIM_OTF2_REJECT(cb, RmaCollectiveBegin);
  MKSIM_OTF2_REJECT(cb, RmaCollectiveEnd);
  MKSIM_OTF2_REJECT(cb, RmaGroupSync);
  MKSIM_OTF2_REJECT(cb, RmaRequestLock);
  MKSIM_OTF2_REJECT(cb, RmaAcquireLock);
  MKSIM_OTF2_REJECT(cb, RmaTryLock);
  MKSIM_OTF2_REJECT(cb, RmaReleaseLock);
  MKSIM_OTF2_REJECT(cb, RmaSync);
  MKSIM_OTF2_REJECT(cb, RmaWaitChange);
  MKSIM_OTF2_REJECT(cb, RmaPut);
  MKSIM_OTF2_REJECT(cb, RmaGet);
  MKSIM_OTF2_REJECT(cb, RmaAtomic);
  MKSIM_OTF2_REJECT(cb, RmaOpCompleteBlocking);
  MKSIM_OTF2_REJECT(cb, RmaOpCompleteNonBlocking);
  MKSIM_OTF2_REJECT(cb, RmaOpTest);
  MKSIM_OTF2_REJECT(cb, RmaOpCompleteRemote);
}

#undef MKSIM_OTF2_REJECT
#undef MKSIM_OTF2_IGNORE

struct CloseReader {
  void operator()(OTF2_Reader* r) const { OTF2_Reader_Close(r); }
};
struct DeleteDefCallbacks {
  void operator()(OTF2_GlobalDefReaderCallbacks* c) const { OTF2_GlobalDefReaderCallbacks_Delete(c); }
};
struct DeleteEvtCallbacks {
  void operator()(OTF2_EvtReaderCallbacks* c) const { OTF2_EvtReaderCallbacks_Delete(c); }
};

// The P MPI locations, rank order, checked against the location definitions.
std::vector<OTF2_LocationRef> mpi_locations(const Definitions& d) {
  if (d.mpi_locations == OTF2_UNDEFINED_GROUP)
    d.fail("no MPI locations group (a Group of type COMM_LOCATIONS and paradigm MPI): not a trace of an MPI program");
  const GroupDef& g = d.groups.at(d.mpi_locations);
  if (g.members.empty()) d.fail("the MPI locations group is empty");
  std::vector<OTF2_LocationRef> locations;
  for (std::size_t r = 0; r < g.members.size(); ++r) {
    const OTF2_LocationRef l = g.members[r];
    auto it = d.locations.find(l);
    if (it == d.locations.end())
      d.fail("rank " + std::to_string(r) + ": location " + std::to_string(l) + " is not defined");
    if (it->second.type != OTF2_LOCATION_TYPE_CPU_THREAD)
      d.fail("rank " + std::to_string(r) + ": location " + std::to_string(l) + " is of type " +
             std::to_string(it->second.type) + ", not a CPU thread");
    for (std::size_t q = 0; q < r; ++q)
      if (locations[q] == l)
        d.fail("ranks " + std::to_string(q) + " and " + std::to_string(r) + " share location " + std::to_string(l));
    locations.push_back(l);
  }
  return locations;
}

}  // namespace

Run read_otf2_run(const std::string& anchor_file) {
  capture_otf2_messages();
  const fs::path anchor(anchor_file);
  const fs::path base = anchor.parent_path() / anchor.stem();  // Score-P: traces.otf2, traces.def, traces/
  std::unique_ptr<OTF2_Reader, CloseReader> reader(OTF2_Reader_Open(anchor_file.c_str()));
  if (!reader) throw TraceError(anchor_file, TraceError::NO_OFFSET, "cannot open the OTF2 archive: " + otf2_said());
  auto check = [&](OTF2_ErrorCode code, const std::string& file, const std::string& what) {
    if (code != OTF2_SUCCESS) throw TraceError(file, TraceError::NO_OFFSET, what + ": " + otf2_error(code));
  };
  check(OTF2_Reader_SetSerialCollectiveCallbacks(reader.get()), anchor_file, "cannot set up the OTF2 reader");

  Definitions defs;
  defs.file = base.string() + ".def";
  {
    OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(reader.get());
    if (!gdr) defs.fail("cannot read the global definitions: " + otf2_said());
    std::unique_ptr<OTF2_GlobalDefReaderCallbacks, DeleteDefCallbacks> cb(OTF2_GlobalDefReaderCallbacks_New());
    register_definitions(cb.get());
    check(OTF2_Reader_RegisterGlobalDefCallbacks(reader.get(), gdr, cb.get(), &defs), defs.file,
          "cannot read the global definitions");
    uint64_t n = 0;
    const OTF2_ErrorCode rc = OTF2_Reader_ReadAllGlobalDefinitions(reader.get(), gdr, &n);
    if (defs.error) throw *defs.error;
    check(rc, defs.file, "cannot read the global definitions");
  }
  if (!defs.clock) defs.fail("no clock properties: timestamps cannot be converted to seconds");
  const std::vector<OTF2_LocationRef> locations = mpi_locations(defs);
  const int P = static_cast<int>(locations.size());
  const OTF2_CommRef world = find_world(defs, locations.size());

  auto event_file = [&](OTF2_LocationRef l) { return (base / (std::to_string(l) + ".evt")).string(); };
  for (OTF2_LocationRef l : locations)
    check(OTF2_Reader_SelectLocation(reader.get(), l), anchor_file, "cannot select location " + std::to_string(l));
  const bool local_defs = OTF2_Reader_OpenDefFiles(reader.get()) == OTF2_SUCCESS;
  check(OTF2_Reader_OpenEvtFiles(reader.get()), anchor_file, "cannot open the event files");
  std::vector<OTF2_EvtReader*> evt_readers;
  for (std::size_t r = 0; r < locations.size(); ++r) {
    const OTF2_LocationRef l = locations[r];
    // local definitions hold the mapping tables and clock offsets the event reader applies (optional)
    if (local_defs) {
      if (OTF2_DefReader* dr = OTF2_Reader_GetDefReader(reader.get(), l)) {
        uint64_t n = 0;
        check(OTF2_Reader_ReadAllLocalDefinitions(reader.get(), dr, &n), (base / (std::to_string(l) + ".def")).string(),
              "cannot read the local definitions of location " + std::to_string(l));
        OTF2_Reader_CloseDefReader(reader.get(), dr);
      }
      otf2_messages.clear();  // a missing local definitions file is not an error
    }
    OTF2_EvtReader* er = OTF2_Reader_GetEvtReader(reader.get(), l);
    if (!er)
      throw TraceError(event_file(l), TraceError::NO_OFFSET,
                       "location " + std::to_string(l) + " (rank " + std::to_string(r) +
                           "): cannot read the events: " + otf2_said());
    evt_readers.push_back(er);
  }
  if (local_defs) OTF2_Reader_CloseDefFiles(reader.get());

  Run run;
  run.dir = anchor_file;
  run.P = P;
  std::unique_ptr<OTF2_EvtReaderCallbacks, DeleteEvtCallbacks> cb(OTF2_EvtReaderCallbacks_New());
  register_events(cb.get());
  for (int r = 0; r < P; ++r) {
    const OTF2_LocationRef l = locations[static_cast<std::size_t>(r)];
    LocationReader lr(defs, event_file(l), l, r, P, world);
    OTF2_EvtReader* er = evt_readers[static_cast<std::size_t>(r)];
    check(OTF2_Reader_RegisterEvtCallbacks(reader.get(), er, cb.get(), &lr), lr.file(), "cannot read the events");
    uint64_t n = 0;
    const OTF2_ErrorCode rc = OTF2_Reader_ReadAllLocalEvents(reader.get(), er, &n);
    if (lr.error()) throw *lr.error();
    const std::string who = "location " + std::to_string(l) + " (rank " + std::to_string(r) + "): ";
    check(rc, lr.file(), who + "cannot read the events (after " + std::to_string(n) + ")");
    const uint64_t defined = defs.locations.at(l).events;
    if (n != defined)
      throw TraceError(lr.file(), TraceError::NO_OFFSET,
                       who + std::to_string(n) + " events read, the definitions say " + std::to_string(defined) +
                           " (truncated or corrupted)");
    std::optional<std::string> problem;
    run.ranks.push_back(lr.finish(problem));
    if (problem) run.problems.push_back(*problem);
    if (r == 0) run.command = lr.command();
  }
  return run;
}

}  // namespace mksim::trace
