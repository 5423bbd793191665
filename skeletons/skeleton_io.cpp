// JSON (format v1, v2 and v3) to typed skeleton, strict: unknown fields, wrong types and bad expressions are errors.
#include "skeletons/skeleton_io.hpp"

#include "skeletons/comms.hpp"

#include "skeletons/distribution.hpp"
#include "skeletons/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace mksim::skeletons {

using Json = nlohmann::ordered_json;

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::BARRIER: return "barrier";
    case CollectiveKind::BCAST: return "bcast";
    case CollectiveKind::REDUCE: return "reduce";
    case CollectiveKind::ALLREDUCE: return "allreduce";
    case CollectiveKind::GATHER: return "gather";
    case CollectiveKind::SCATTER: return "scatter";
    case CollectiveKind::ALLGATHER: return "allgather";
    case CollectiveKind::ALLTOALL: return "alltoall";
  }
  return "?";
}

bool is_rooted(CollectiveKind k) {
  return k == CollectiveKind::BCAST || k == CollectiveKind::REDUCE || k == CollectiveKind::GATHER ||
         k == CollectiveKind::SCATTER;
}

const std::string& comm_name(const Skeleton& sk, int comm) {
  static const std::string world = "world";
  return comm <= 0 ? world : sk.comms.at(static_cast<std::size_t>(comm - 1)).name;
}

const char* p2p_name(P2PKind k) {
  switch (k) {
    case P2PKind::SEND: return "send";
    case P2PKind::RECV: return "recv";
    case P2PKind::ISEND: return "isend";
    case P2PKind::IRECV: return "irecv";
  }
  return "?";
}

std::uint64_t fnv1a64(const std::string& bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hash_hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

constexpr const char* RESERVED[] = {"P", "rank", "floor", "ceil", "min", "max", "mod", "log2",
                                    "sqrt", "abs", "xor", "if", "any"};
// names format v3 adds (reserved in version 3 files only, so that older files keep their names)
constexpr const char* RESERVED_V3[] = {"dims", "cart_coord", "cart_rank", "PROC_NULL", "parent_rank", "parent_size",
                                       "member", "world"};
constexpr int LATEST_VERSION = 3;

class Reader {
 public:
  Reader(std::string file, Skeleton& sk) : file_(std::move(file)), sk_(sk) {}

  void read(const Json& root) {
    expect_object(root, "");
    allowed(root, "", {"format", "version", "name", "description", "params", "let", "comms", "programs", "body",
                       "phases", "provenance", "doc"});
    if (!root.contains("format") || root["format"] != "mksim-skeleton")
      fail("/format", "must be \"mksim-skeleton\"");
    if (!root.contains("version") || !root["version"].is_number_integer() ||
        (root["version"] != 1 && root["version"] != 2 && root["version"] != 3))
      fail("/version", "this mksim reads skeleton format versions 1, 2 and 3");
    sk_.version = root["version"].get<int>();
    sk_.name = opt_string(root, "name", "");
    sk_.description = opt_string(root, "description", "");

    sk_.symbols.add("P");
    sk_.symbols.add("rank");
    if (root.contains("params")) read_params(root["params"]);
    if (root.contains("comms")) {
      need_version(3, "/comms", "\"comms\" (communicators)");
      declare_comms(root["comms"]);
    }
    if (root.contains("let")) read_defines(root["let"]);
    if (root.contains("comms")) read_comms(root["comms"]);

    bool has_programs = root.contains("programs"), has_body = root.contains("body");
    if (has_programs == has_body) fail("", "give exactly one of \"programs\" (rank groups) or \"body\" (all ranks)");
    if (has_body) {
      RankGroup g;
      g.ranks = parse_expr("1", sk_.symbols);
      g.body = read_body(root["body"], "/body", "");
      sk_.groups.push_back(std::move(g));
    } else {
      const Json& progs = root["programs"];
      if (!progs.is_array() || progs.empty()) fail("/programs", "must be a non-empty array of rank groups");
      for (std::size_t i = 0; i < progs.size(); ++i) {
        std::string at = "/programs/" + std::to_string(i);
        expect_object(progs[i], at);
        allowed(progs[i], at, {"ranks", "body", "doc", "phase"});
        RankGroup g;
        if (!progs[i].contains("ranks")) fail(at, "missing \"ranks\" (a condition on rank and P)");
        g.ranks = expr(progs[i]["ranks"], at + "/ranks");
        if (!progs[i].contains("body")) fail(at, "missing \"body\"");
        g.body = read_body(progs[i]["body"], at + "/body", opt_string(progs[i], "phase", "", at));
        sk_.groups.push_back(std::move(g));
      }
    }
    if (root.contains("phases")) read_phases(root["phases"]);
  }

 private:
  void read_phases(const Json& phases) {
    if (!phases.is_array()) fail("/phases", "must be an array of phases");
    std::set<std::string> names;
    for (std::size_t i = 0; i < phases.size(); ++i) {
      const std::string at = "/phases/" + std::to_string(i);
      const Json& j = phases[i];
      expect_object(j, at);
      allowed(j, at, {"name", "type", "collective", "depth", "occurrences", "senders", "receivers", "overlap_s",
                      "independent_of_next", "doc", "fit"});
      PhaseDecl d;
      d.name = opt_string(j, "name", "", at);
      if (d.name.empty()) fail(at + "/name", "a phase needs a non-empty name");
      if (!names.insert(d.name).second) fail(at + "/name", "duplicate phase name \"" + d.name + "\"");
      d.type = opt_string(j, "type", "", at);
      if (d.type != "synchronous" && d.type != "pipeline" && d.type != "collective")
        fail(at + "/type", "must be \"synchronous\", \"pipeline\" or \"collective\"");
      d.collective = opt_string(j, "collective", "", at);
      auto opt_expr = [&](const char* key, const char* def) { return expr(j.contains(key) ? j[key] : Json(def), at + "/" + key); };
      d.depth = opt_expr("depth", "1");
      d.occurrences = opt_expr("occurrences", "1");
      d.senders = opt_expr("senders", "1");
      d.receivers = opt_expr("receivers", "1");
      d.overlap_s = opt_expr("overlap_s", "0");
      if (j.contains("independent_of_next")) {
        if (!j["independent_of_next"].is_boolean()) fail(at + "/independent_of_next", "must be true or false");
        d.independent_of_next = j["independent_of_next"].get<bool>();
      }
      sk_.phases.push_back(std::move(d));
    }
  }

  [[noreturn]] void fail(const std::string& at, const std::string& msg) const {
    throw SkeletonError(file_, at.empty() ? "/" : at, msg);
  }
  void expect_object(const Json& j, const std::string& at) const {
    if (!j.is_object()) fail(at, "expected an object, got " + j.dump());
  }
  void allowed(const Json& j, const std::string& at, std::initializer_list<const char*> keys, const std::string& what = "") const {
    allowed(j, at, std::vector<const char*>(keys), what);
  }
  /** @brief Every field of j must be one of keys; `what` says where ("for op \"send\"") in the message. */
  void allowed(const Json& j, const std::string& at, const std::vector<const char*>& keys, const std::string& what = "") const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool ok = false;
      for (const char* k : keys) ok = ok || it.key() == k;
      if (!ok) {
        std::string list;
        for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
        fail(at + "/" + it.key(), "unknown field \"" + it.key() + "\"" + (what.empty() ? "" : " " + what) +
                                      " (allowed" + (what.empty() ? " here" : "") + ": " + list + ")");
      }
    }
  }
  std::string opt_string(const Json& j, const char* key, const std::string& def, const std::string& at = "") const {
    if (!j.contains(key)) return def;
    if (!j[key].is_string()) fail(at + "/" + key, "must be a string, got " + j[key].dump());
    return j[key].get<std::string>();
  }
  void check_name(const std::string& name, const std::string& at) const {
    bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) fail(at, "\"" + name + "\" is not a valid name (letters, digits, _)");
    for (const char* r : RESERVED)
      if (name == r) fail(at, "\"" + name + "\" is reserved");
    if (sk_.version >= 3)
      for (const char* r : RESERVED_V3)
        if (name == r) fail(at, "\"" + name + "\" is reserved (format version 3)");
    if (sk_.symbols.find(name) >= 0) fail(at, "\"" + name + "\" is already defined");
  }
  Expr expr(const Json& j, const std::string& at) const {
    std::string text;
    if (j.is_number()) {
      std::ostringstream os;
      os.precision(17);
      os << j.get<double>();
      text = os.str();
    } else if (j.is_string()) {
      text = j.get<std::string>();
    } else if (j.is_boolean()) {
      text = j.get<bool>() ? "1" : "0";
    } else {
      fail(at, "expected an expression (string or number), got " + j.dump());
    }
    Expr e;
    try {
      e = parse_expr(text, sk_.symbols);
    } catch (const SkeletonError& err) {
      fail(at, err.what());
    }
    if (!in_comm_)
      for (int slot : {sk_.parent_rank_slot, sk_.parent_size_slot, sk_.member_slot})
        if (slot >= 0 && e.uses(slot))
          fail(at, "in expression \"" + text + "\": '" + sk_.symbols.names()[static_cast<std::size_t>(slot)] +
                       "' is only defined in a communicator's declaration (\"comms\")");
    return e;
  }
  void read_params(const Json& params) {
    expect_object(params, "/params");
    for (auto it = params.begin(); it != params.end(); ++it) {
      std::string at = "/params/" + it.key();
      check_name(it.key(), at);
      Param p;
      p.name = it.key();
      const Json& v = it.value();
      if (v.is_number()) {
        p.default_value = v.get<double>();
      } else if (v.is_object()) {
        allowed(v, at, {"default", "doc", "unit"});
        if (v.contains("default")) {
          if (!v["default"].is_number()) fail(at + "/default", "must be a number");
          p.default_value = v["default"].get<double>();
        }
        p.doc = opt_string(v, "doc", "", at);
        opt_string(v, "unit", "", at);
      } else if (!v.is_null()) {
        fail(at, "a parameter is a number (its default), null (required) or {\"default\":..,\"doc\":..}");
      }
      sk_.symbols.add(p.name);
      sk_.params.push_back(std::move(p));
    }
  }
  void read_defines(const Json& defs) {
    expect_object(defs, "/let");
    for (auto it = defs.begin(); it != defs.end(); ++it) {
      std::string at = "/let/" + it.key();
      check_name(it.key(), at);
      Expr e = expr(it.value(), at);  // may use only names defined above it
      // a value that uses a communicator's rank or size (or such a value) is computed after the communicators
      bool late = false;
      for (int slot : comm_slots_) late = late || e.uses(slot);
      for (const Define& d : sk_.defines) late = late || (d.late && e.uses(d.slot));
      Define d{it.key(), sk_.symbols.add(it.key()), std::move(e), late};
      sk_.defines.push_back(std::move(d));
    }
  }
  /** @brief A feature of format v2 used in a file that says version 1 is an error at `at`. */
  void need_version2(const std::string& at, const std::string& what) const { need_version(2, at, what); }
  /** @brief A feature of format version v used in an older file is an error at `at`. */
  void need_version(int v, const std::string& at, const std::string& what) const {
    if (sk_.version < v)
      fail(at, what + " needs version " + std::to_string(v) + " (this file says \"version\": " + std::to_string(sk_.version) + ")");
  }

  // ---- communicators (format v3) ----

  /** @brief Names every communicator and its NAME.rank / NAME.size slots before `let` is read (a `let` may
   *  use them), and the names only declarations see. */
  void declare_comms(const Json& comms) {
    expect_object(comms, "/comms");
    sk_.parent_rank_slot = sk_.symbols.add("parent_rank");
    sk_.parent_size_slot = sk_.symbols.add("parent_size");
    sk_.member_slot = sk_.symbols.add("member");
    for (auto it = comms.begin(); it != comms.end(); ++it) {
      const std::string at = "/comms/" + it.key();
      const std::string& name = it.key();
      bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
      for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ok) fail(at, "\"" + name + "\" is not a valid communicator name (letters, digits, _)");
      if (name == "world") fail(at, "\"world\" is MPI_COMM_WORLD, always there: give the communicator another name");
      CommDecl d;
      d.name = name;
      d.pointer = at;
      d.rank_slot = sk_.symbols.add(name + ".rank");
      d.size_slot = sk_.symbols.add(name + ".size");
      comm_slots_.push_back(d.rank_slot);
      comm_slots_.push_back(d.size_slot);
      sk_.comms.push_back(std::move(d));
    }
  }

  /** @brief The communicator a field names ("world" or a declared one, before `limit` when given). */
  int comm_index(const Json& j, const std::string& at, std::size_t limit = SIZE_MAX) const {
    if (!j.is_string()) fail(at, "a communicator is named by a string, got " + j.dump());
    const std::string n = j.get<std::string>();
    if (n == "world") return 0;
    for (std::size_t k = 0; k < sk_.comms.size() && k < limit; ++k)
      if (sk_.comms[k].name == n) return static_cast<int>(k) + 1;
    std::string known = "world";
    for (std::size_t k = 0; k < sk_.comms.size() && k < limit; ++k) known += ", " + sk_.comms[k].name;
    fail(at, "unknown communicator \"" + n + "\" (" + (limit == SIZE_MAX ? "declared" : "declared before this one") + ": " + known + ")");
  }

  void read_comms(const Json& comms) {
    std::size_t k = 0;
    for (auto it = comms.begin(); it != comms.end(); ++it, ++k) {
      CommDecl& d = sk_.comms[k];
      const std::string& at = d.pointer;
      const Json& j = it.value();
      expect_object(j, at);
      static const std::pair<const char*, CommDecl::Kind> kinds[] = {
          {"split", CommDecl::Kind::SPLIT},       {"cart", CommDecl::Kind::CART}, {"cart_sub", CommDecl::Kind::CART_SUB},
          {"dup", CommDecl::Kind::DUP},           {"create", CommDecl::Kind::CREATE}, {"graph", CommDecl::Kind::GRAPH}};
      const char* kind_key = nullptr;
      for (const auto& [key, kind] : kinds)
        if (j.contains(key)) {
          if (kind_key) fail(at, std::string("a communicator is made one way: \"") + kind_key + "\" and \"" + key + "\" both given");
          kind_key = key;
          d.kind = kind;
        }
      if (!kind_key) fail(at, "a communicator needs one of \"split\", \"cart\", \"cart_sub\", \"dup\", \"create\", \"graph\" (its parent)");
      d.parent = comm_index(j[kind_key], at + "/" + kind_key, k);
      // its expressions see P, rank, parameters, `let` values not computed from communicators, the ranks and
      // sizes of the communicators declared before it, parent_rank, parent_size (and member, in "members")
      std::vector<int> forbidden;
      for (std::size_t q = k; q < sk_.comms.size(); ++q) forbidden.insert(forbidden.end(), {sk_.comms[q].rank_slot, sk_.comms[q].size_slot});
      for (const Define& def : sk_.defines)
        if (def.late) forbidden.push_back(def.slot);
      auto cexpr = [&](const Json& v, const std::string& where, bool member_ok = false) {
        in_comm_ = true;
        Expr e = expr(v, where);
        in_comm_ = false;
        for (int slot : forbidden)
          if (e.uses(slot))
            fail(where, "in expression \"" + e.text() + "\": '" + sk_.symbols.names()[static_cast<std::size_t>(slot)] +
                            "' is not known yet when communicator \"" + d.name + "\" is made (its own and later communicators' ranks, and `let` values computed from them)");
        if (!member_ok && e.uses(sk_.member_slot))
          fail(where, "in expression \"" + e.text() + "\": 'member' is only defined in \"members\" of a \"create\"");
        return e;
      };
      auto bool_list = [&](const char* key, std::size_t n) {
        std::vector<bool> out;
        const std::string where = at + "/" + key;
        if (!j.contains(key)) fail(at, std::string("\"") + kind_key + "\" needs \"" + key + "\"");
        const Json& v = j[key];
        if (!v.is_array() || (n != SIZE_MAX && v.size() != n))
          fail(where, "must be an array of " + (n == SIZE_MAX ? std::string("booleans") : std::to_string(n) + " booleans (one per dimension)"));
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (!v[i].is_boolean()) fail(where + "/" + std::to_string(i), "must be true or false, got " + v[i].dump());
          out.push_back(v[i].get<bool>());
        }
        return out;
      };
      switch (d.kind) {
        case CommDecl::Kind::SPLIT:
          allowed(j, at, {"split", "color", "key", "doc"}, "for a \"split\" communicator");
          if (!j.contains("color")) fail(at, "\"split\" needs \"color\" (an expression; negative: MPI_UNDEFINED)");
          d.color = cexpr(j["color"], at + "/color");
          d.key = cexpr(j.contains("key") ? j["key"] : Json("parent_rank"), at + "/key");
          break;
        case CommDecl::Kind::CART: {
          allowed(j, at, {"cart", "dims", "periods", "doc"}, "for a \"cart\" communicator");
          if (!j.contains("dims") || !j["dims"].is_array() || j["dims"].empty() || j["dims"].size() > 3)
            fail(at + "/dims", "must be an array of 1 to 3 expressions (the grid's dimensions, row-major)");
          for (std::size_t i = 0; i < j["dims"].size(); ++i) d.dims.push_back(cexpr(j["dims"][i], at + "/dims/" + std::to_string(i)));
          d.periods = j.contains("periods") ? bool_list("periods", d.dims.size()) : std::vector<bool>(d.dims.size(), false);
          break;
        }
        case CommDecl::Kind::CART_SUB: {
          allowed(j, at, {"cart_sub", "remain", "doc"}, "for a \"cart_sub\" communicator");
          const CommDecl* parent = d.parent > 0 ? &sk_.comms[static_cast<std::size_t>(d.parent - 1)] : nullptr;
          if (!parent || (parent->kind != CommDecl::Kind::CART && parent->kind != CommDecl::Kind::CART_SUB))
            fail(at + "/cart_sub", "the parent of a \"cart_sub\" is a \"cart\" (or \"cart_sub\") communicator");
          std::size_t nd = parent->kind == CommDecl::Kind::CART
                               ? parent->dims.size()
                               : static_cast<std::size_t>(std::count(parent->remain.begin(), parent->remain.end(), true));
          d.remain = bool_list("remain", nd);
          break;
        }
        case CommDecl::Kind::DUP:
          allowed(j, at, {"dup", "doc"}, "for a \"dup\" communicator");
          break;
        case CommDecl::Kind::CREATE:
          allowed(j, at, {"create", "members", "size", "doc"}, "for a \"create\" communicator");
          if (!j.contains("members") || !j.contains("size"))
            fail(at, "\"create\" needs \"members\" (the parent rank of member `member`) and \"size\" (how many)");
          d.members = cexpr(j["members"], at + "/members", true);
          d.size = cexpr(j["size"], at + "/size");
          break;
        case CommDecl::Kind::GRAPH:
          allowed(j, at, {"graph", "nodes", "doc"}, "for a \"graph\" communicator");
          d.size = cexpr(j.contains("nodes") ? j["nodes"] : Json("parent_size"), at + "/nodes");
          break;
      }
    }
  }
  Distribution read_dist(const Json& j, const std::string& at) const {
    expect_object(j, at);
    if (!j.contains("type") || !j["type"].is_string())
      fail(at, "a distribution needs \"type\": \"normal\", \"lognormal\", \"uniform\" or \"empirical\"");
    const std::string type = j["type"].get<std::string>();
    Distribution d;
    if (type == "empirical") {
      d.type = Distribution::Type::EMPIRICAL;
      allowed(j, at, {"type", "quantiles", "draw"}, "for an empirical distribution");
      if (!j.contains("quantiles")) fail(at, "an empirical distribution needs \"quantiles\"");
      const Json& q = j["quantiles"];
      if (!q.is_array() || q.size() != Distribution::QUANTILES)
        fail(at + "/quantiles", "must be an array of 11 numbers (multipliers of the mean at p = 0, 0.1, ..., 1)");
      for (std::size_t i = 0; i < q.size(); ++i) {
        const std::string qi = at + "/quantiles/" + std::to_string(i);
        if (!q[i].is_number()) fail(qi, "must be a number, got " + q[i].dump());
        const double v = q[i].get<double>();
        if (!(v >= 0) || !std::isfinite(v)) fail(qi, "a quantile is a finite multiplier >= 0, got " + q[i].dump());
        if (!d.quantiles.empty() && v < d.quantiles.back())
          fail(qi, "quantiles must not decrease (" + q[i].dump() + " after " + q[i - 1].dump() + ")");
        d.quantiles.push_back(v);
      }
      // The block's amount is the mean: the quantiles are rescaled so that their distribution has mean 1.
      const double mean = empirical_mean(d.quantiles);
      if (!(mean > 0) || !std::isfinite(mean)) fail(at + "/quantiles", "the distribution's mean is not positive and finite (all quantiles 0, or too large)");
      for (double& v : d.quantiles) v /= mean;
    } else if (type == "normal" || type == "lognormal" || type == "uniform") {
      d.type = type == "normal" ? Distribution::Type::NORMAL
               : type == "lognormal" ? Distribution::Type::LOGNORMAL : Distribution::Type::UNIFORM;
      allowed(j, at, {"type", "cv", "draw"}, "for a " + type + " distribution");
      if (!j.contains("cv")) fail(at, "a " + type + " distribution needs \"cv\" (coefficient of variation)");
      d.cv = expr(j["cv"], at + "/cv");
      if (d.cv.is_constant()) {
        const double cv = d.cv.eval(std::span<const double>());
        std::ostringstream shown;
        shown << cv;
        if (std::string why = cv_problem(d, cv); !why.empty()) fail(at + "/cv", "cv = " + shown.str() + " " + why);
      }
    } else {
      fail(at + "/type", "unknown distribution type \"" + type + "\" (known: normal, lognormal, uniform, empirical)");
    }
    if (j.contains("draw")) {
      if (!j["draw"].is_string() || (j["draw"] != "same" && j["draw"] != "rank"))
        fail(at + "/draw", "must be \"same\" (every rank draws the same multipliers) or \"rank\" (each rank its own, the default), got " +
                               j["draw"].dump());
      d.same_on_ranks = j["draw"] == "same";
    }
    return d;
  }
  int request_slot(const Json& j, const std::string& at) {
    if (!j.is_string() || j.get<std::string>().empty()) fail(at, "a request name is a non-empty string");
    std::string n = j.get<std::string>();
    for (std::size_t i = 0; i < sk_.request_names.size(); ++i)
      if (sk_.request_names[i] == n) return static_cast<int>(i);
    sk_.request_names.push_back(n);
    return sk_.request_slots++;
  }
  /** @brief The "comm" of an op (format v3), world when absent. */
  int op_comm(const Json& j, const std::string& at) const {
    if (!j.contains("comm")) return 0;
    need_version(3, at + "/comm", "\"comm\" on an op");
    return comm_index(j["comm"], at + "/comm");
  }

  Body read_body(const Json& j, const std::string& at, const std::string& phase) {
    if (!j.is_array()) fail(at, "a body is an array of blocks");
    Body body;
    for (std::size_t i = 0; i < j.size(); ++i) body.push_back(read_block(j[i], at + "/" + std::to_string(i), phase));
    return body;
  }
  Block read_block(const Json& j, const std::string& at, const std::string& inherited_phase) {
    expect_object(j, at);
    if (!j.contains("op") || !j["op"].is_string()) fail(at, "a block needs \"op\" (a string)");
    const std::string op = j["op"].get<std::string>();
    Block b;
    b.index = static_cast<int>(sk_.blocks.size());
    BlockInfo info;
    info.pointer = at;
    info.id = opt_string(j, "id", at, at);
    if (j.contains("id") && !ids_.insert(info.id).second) fail(at + "/id", "block id \"" + info.id + "\" is used twice");
    info.op = op;
    info.phase = opt_string(j, "phase", inherited_phase, at);
    opt_string(j, "doc", "", at);
    sk_.blocks.push_back(info);  // reserve the index before children
    const std::string& phase = info.phase;
    auto common = [](std::initializer_list<const char*> extra) {
      std::vector<const char*> v = {"op", "id", "phase", "doc", "provenance", "fit"};
      v.insert(v.end(), extra.begin(), extra.end());
      return v;
    };
    auto check_keys = [&](const std::vector<const char*>& keys) { allowed(j, at, keys, "for op \"" + op + "\""); };
    auto need = [&](const char* key) -> const Json& {
      if (!j.contains(key)) fail(at, "op \"" + op + "\" needs \"" + key + "\"");
      return j[key];
    };

    if (op == "region") {
      need_version2(at + "/op", "op \"region\"");
      check_keys(common({"name", "body"}));
      Region r;
      const Json& name = need("name");
      if (!name.is_string() || name.get<std::string>().empty()) fail(at + "/name", "a region's name is a non-empty string");
      r.name = name.get<std::string>();
      r.body = read_body(need("body"), at + "/body", phase);
      b.op = std::move(r);
    } else if (op == "loop") {
      check_keys(common({"count", "var", "body"}));
      Loop l;
      l.count = expr(need("count"), at + "/count");
      if (j.contains("var")) {
        if (!j["var"].is_string()) fail(at + "/var", "must be a name");
        std::string v = j["var"].get<std::string>();
        // A loop variable is visible in its body; sibling loops may reuse a name, nested ones may not.
        if (active_loop_vars_.count(v)) fail(at + "/var", "\"" + v + "\" is already the variable of an enclosing loop");
        if (!loop_vars_.count(v)) check_name(v, at + "/var");
        loop_vars_.insert(v);
        l.var_slot = sk_.symbols.add(v);
        active_loop_vars_.insert(v);
        l.body = read_body(need("body"), at + "/body", phase);
        active_loop_vars_.erase(v);
      } else {
        l.body = read_body(need("body"), at + "/body", phase);
      }
      b.op = std::move(l);
    } else if (op == "if") {
      check_keys(common({"cond", "prob", "coin", "coin_rank", "draw", "then", "else"}));
      Branch br;
      if (j.contains("cond") == j.contains("prob")) fail(at, "op \"if\" needs exactly one of \"cond\" or \"prob\"");
      if (j.contains("cond")) br.condition = expr(j["cond"], at + "/cond");
      else br.probability = expr(j["prob"], at + "/prob");
      if (j.contains("coin")) {
        need_version2(at + "/coin", "\"coin\"");
        if (!j.contains("prob")) fail(at + "/coin", "a coin is tossed by a \"prob\" branch only");
        const std::string name = opt_string(j, "coin", "", at);
        if (name.empty()) fail(at + "/coin", "a coin needs a name");
        const auto known = std::find(sk_.coins.begin(), sk_.coins.end(), name);
        br.coin = static_cast<int>(known - sk_.coins.begin());
        if (known == sk_.coins.end()) sk_.coins.push_back(name);
        br.coin_rank = expr(j.contains("coin_rank") ? j["coin_rank"] : Json("rank"), at + "/coin_rank");
      } else if (j.contains("coin_rank")) {
        fail(at + "/coin_rank", "\"coin_rank\" without \"coin\"");
      }
      if (j.contains("draw")) {
        if (!j.contains("coin")) fail(at + "/draw", "\"draw\" is how a coin is tossed: it needs \"coin\"");
        const std::string draw = opt_string(j, "draw", "", at);
        if (draw != "even" && draw != "random") fail(at + "/draw", "\"draw\" is \"even\" or \"random\", not \"" + draw + "\"");
        br.even = draw == "even";
      }
      br.then_body = read_body(need("then"), at + "/then", phase);
      if (j.contains("else")) br.else_body = read_body(j["else"], at + "/else", phase);
      b.op = std::move(br);
    } else if (op == "compute") {
      check_keys(common({"seconds", "flops", "dist"}));
      if (j.contains("seconds") == j.contains("flops")) fail(at, "op \"compute\" needs exactly one of \"seconds\" or \"flops\"");
      Compute c;
      c.in_flops = j.contains("flops");
      c.amount = expr(c.in_flops ? j["flops"] : j["seconds"], at + (c.in_flops ? "/flops" : "/seconds"));
      if (j.contains("dist")) {
        need_version2(at + "/dist", "\"dist\" on a compute block");
        c.dist = read_dist(j["dist"], at + "/dist");
      }
      b.op = std::move(c);
    } else if (op == "send" || op == "recv" || op == "isend" || op == "irecv") {
      bool nonblocking = op[0] == 'i';
      bool is_recv = op == "recv" || op == "irecv";
      check_keys(nonblocking ? common({"peer", "size", "tag", "req", "comm"}) : common({"peer", "size", "tag", "comm"}));
      P2P p;
      p.comm = op_comm(j, at);
      p.kind = op == "send" ? P2PKind::SEND : op == "recv" ? P2PKind::RECV : op == "isend" ? P2PKind::ISEND : P2PKind::IRECV;
      const Json& peer = need("peer");
      if (is_recv && peer.is_string() && peer.get<std::string>() == "any") p.any_source = true;
      else p.peer = expr(peer, at + "/peer");
      p.size_bytes = expr(need("size"), at + "/size");
      if (j.contains("tag") && is_recv && j["tag"].is_string() && j["tag"].get<std::string>() == "any") p.any_tag = true;
      else p.tag = expr(j.contains("tag") ? j["tag"] : Json(0), at + "/tag");
      if (nonblocking && j.contains("req")) p.request = request_slot(j["req"], at + "/req");
      b.op = std::move(p);
    } else if (op == "wait") {
      check_keys(common({"req"}));
      Wait w;
      const Json& r = need("req");
      if (!r.is_string()) fail(at + "/req", "a request name is a string");
      bool known = false;
      for (const auto& n : sk_.request_names) known = known || n == r.get<std::string>();
      if (!known) fail(at + "/req", "request \"" + r.get<std::string>() + "\" is not issued by any isend/irecv before");
      w.request = request_slot(r, at + "/req");
      b.op = w;
    } else if (op == "waitall") {
      check_keys(common({}));
      b.op = WaitAll{};
    } else {
      static const std::pair<const char*, CollectiveKind> colls[] = {
          {"barrier", CollectiveKind::BARRIER},     {"bcast", CollectiveKind::BCAST},
          {"reduce", CollectiveKind::REDUCE},       {"allreduce", CollectiveKind::ALLREDUCE},
          {"gather", CollectiveKind::GATHER},       {"scatter", CollectiveKind::SCATTER},
          {"allgather", CollectiveKind::ALLGATHER}, {"alltoall", CollectiveKind::ALLTOALL}};
      const CollectiveKind* kind = nullptr;
      for (const auto& [name, k] : colls)
        if (op == name) kind = &k;
      if (!kind)
        fail(at + "/op", "unknown op \"" + op +
                             "\" (known: loop, if, region, compute, send, recv, isend, irecv, wait, waitall, barrier, "
                             "bcast, reduce, allreduce, gather, scatter, allgather, alltoall)");
      Collective c;
      c.kind = *kind;
      bool rooted = is_rooted(c.kind);
      if (c.kind == CollectiveKind::BARRIER) check_keys(common({"comm"}));
      else if (rooted) check_keys(common({"root", "size", "comm"}));
      else check_keys(common({"size", "comm"}));
      c.comm = op_comm(j, at);
      c.root = expr(rooted && j.contains("root") ? j["root"] : Json(0), at + "/root");
      c.size_bytes = c.kind == CollectiveKind::BARRIER ? parse_expr("0", sk_.symbols) : expr(need("size"), at + "/size");
      b.op = std::move(c);
    }
    return b;
  }

  std::string file_;
  Skeleton& sk_;
  bool in_comm_ = false;          // reading a communicator's declaration: parent_rank, parent_size allowed
  std::vector<int> comm_slots_;   // the NAME.rank, NAME.size slots of the declared communicators
  std::set<std::string> loop_vars_;
  std::set<std::string> ids_;
  std::set<std::string> active_loop_vars_;
};

}  // namespace

Skeleton parse_skeleton(const std::string& text, const std::string& file) {
  // The reader, the checks and dump() in messages recurse as deep as the JSON: bound it while parsing.
  constexpr int MAX_DEPTH = 256;
  const auto bounded = [&](int depth, Json::parse_event_t event, Json&) {
    if (depth >= MAX_DEPTH && (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start))
      throw SkeletonError(file, "", "not a skeleton: JSON nested more than " + std::to_string(MAX_DEPTH) + " levels deep");
    return true;
  };
  Json root;
  try {
    root = Json::parse(text, bounded);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the offset where parsing stopped; a truncated file stops at its end.
    throw SkeletonError(file, "byte " + std::to_string(e.byte), std::string("not valid JSON: ") + e.what());
  } catch (const nlohmann::json::exception& e) {  // out_of_range 406: a number beyond the range of double
    throw SkeletonError(file, "", std::string("not valid JSON: ") + e.what());
  }
  Skeleton sk;
  sk.file = file;
  sk.hash = fnv1a64(text);
  Reader(file, sk).read(root);
  return sk;
}

Skeleton load_skeleton(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SkeletonError(path, "", "cannot open skeleton file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_skeleton(ss.str(), path);
}

std::vector<double> bind_parameters(const Skeleton& sk, int P, const std::map<std::string, double>& values) {
  if (P < 1) throw SkeletonError(sk.file, "", "P must be at least 1, got " + std::to_string(P));
  std::vector<double> frame(sk.symbols.size(), 0.0);
  frame[Skeleton::SLOT_P] = P;
  for (const auto& [name, v] : values) {
    bool known = false;
    for (const auto& p : sk.params) known = known || p.name == name;
    if (!known) {
      std::string list;
      for (const auto& p : sk.params) list += (list.empty() ? "" : ", ") + p.name;
      throw SkeletonError(sk.file, "/params", "unknown parameter \"" + name + "\" (this skeleton has: " +
                                                  (list.empty() ? "none" : list) + ")");
    }
  }
  for (const auto& p : sk.params) {
    int slot = sk.symbols.find(p.name);
    auto it = values.find(p.name);
    if (it != values.end()) frame[slot] = it->second;
    else if (p.default_value) frame[slot] = *p.default_value;
    else throw SkeletonError(sk.file, "/params/" + p.name, "parameter \"" + p.name + "\" has no default: give --param " + p.name + "=VALUE");
  }
  return frame;
}

void bind_rank(const Skeleton& sk, std::vector<double>& frame, int rank) {
  if (!sk.comms.empty()) {  // the communicators need every rank's frame: O(P) (loops over ranks use the layout)
    bind_rank(sk, frame, rank, layout_comms(sk, frame, static_cast<int>(frame[Skeleton::SLOT_P])));
    return;
  }
  frame[Skeleton::SLOT_RANK] = rank;
  for (const auto& d : sk.defines) frame[d.slot] = d.value.eval(frame);
}

int select_group(const Skeleton& sk, const std::vector<double>& frame) {
  for (std::size_t g = 0; g < sk.groups.size(); ++g)
    if (sk.groups[g].ranks.eval(frame) != 0) return static_cast<int>(g);
  return -1;
}

namespace {

struct Checker {
  const Skeleton& sk;
  const CommLayout& layout;
  std::vector<double>& frame;
  int P;
  int rank;

  [[noreturn]] void bad(const Block& b, const std::string& what) const {
    const BlockInfo& info = sk.blocks[static_cast<std::size_t>(b.index)];
    throw SkeletonError(sk.file, info.id,
                        "at P=" + std::to_string(P) + ", rank " + std::to_string(rank) + ": " + what +
                            (info.id != info.pointer ? " [" + info.pointer + "]" : ""));
  }
  static std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }
  /** @brief "world" ranks as before; on a communicator, the rank's size of it, and it must be a member. */
  int comm_size(const Block& b, int comm) const {
    if (comm == 0) return P;
    const int n = layout.size_of(comm, rank);
    if (n == 0) bad(b, "rank " + std::to_string(rank) + " is not a member of communicator \"" + comm_name(sk, comm) + "\"");
    return n;
  }
  void check_rank(const Block& b, const Expr& e, const char* what, int comm = 0, bool null_ok = false) const {
    const int n = comm_size(b, comm);
    double v = e.eval(frame);
    if (null_ok && v == PROC_NULL_PEER) return;
    if (!(v >= 0 && v < n) || v != std::floor(v)) {
      std::string msg = std::string(what) + " \"" + e.text() + "\" = " + fmt(v) + " is not a rank in [0, " + std::to_string(n) + ")";
      if (comm != 0) msg += " of communicator \"" + comm_name(sk, comm) + "\"";
      if (null_ok) msg += " or PROC_NULL (-1)";
      bad(b, msg);
    }
  }
  /** @brief Sizes are finite and >= 0 (format v3: whole bytes too). */
  void check_size(const Block& b, const Expr& e) const {
    double v = e.eval(frame);
    if (!(v >= 0) || !std::isfinite(v) || (sk.version >= 3 && v != std::floor(v)))
      bad(b, "size \"" + e.text() + "\" = " + fmt(v) + " is not a byte count" + (sk.version >= 3 ? " (a non-negative integer)" : ""));
  }

  void body(const Body& blocks) {
    for (const Block& b : blocks) std::visit([&](const auto& op) { visit(b, op); }, b.op);
  }
  void visit(const Block& b, const Loop& op) {
    double n = op.count.eval(frame);
    if (!(n >= 0) || !std::isfinite(n) || (sk.version >= 3 && n != std::floor(n)))
      bad(b, "loop count \"" + op.count.text() + "\" = " + fmt(n) + " is not a count" + (sk.version >= 3 ? " (a non-negative integer)" : ""));
    const double iters = std::floor(n);  // (a cast to an integer type is undefined beyond its range)
    if (iters == 0) return;
    double saved = op.var_slot >= 0 ? frame[op.var_slot] : 0;
    for (double it : {0.0, iters - 1}) {
      if (op.var_slot >= 0) frame[op.var_slot] = it;
      body(op.body);
      if (iters == 1) break;
    }
    if (op.var_slot >= 0) frame[op.var_slot] = saved;
  }
  void visit(const Block& b, const Branch& op) {
    if (op.condition) {
      body(op.condition->eval(frame) != 0 ? op.then_body : op.else_body);
    } else {
      double p = op.probability.eval(frame);
      if (!(p >= 0 && p <= 1)) bad(b, "probability \"" + op.probability.text() + "\" = " + fmt(p) + " is not in [0, 1]");
      if (op.coin >= 0) check_rank(b, op.coin_rank, "coin_rank");
      body(op.then_body);
      body(op.else_body);
    }
  }
  void visit(const Block&, const Region& op) { body(op.body); }
  void visit(const Block& b, const Compute& op) {
    double v = op.amount.eval(frame);
    if (!(v >= 0) || !std::isfinite(v)) bad(b, "compute amount \"" + op.amount.text() + "\" = " + fmt(v) + " is negative or not finite");
    if (op.dist && op.dist->type != Distribution::Type::EMPIRICAL) {
      const double cv = op.dist->cv.eval(frame);
      if (std::string why = cv_problem(*op.dist, cv); !why.empty()) bad(b, "cv \"" + op.dist->cv.text() + "\" = " + fmt(cv) + " " + why);
    }
  }
  void visit(const Block& b, const P2P& op) {
    const bool null_ok = sk.version >= 3;  // MPI_PROC_NULL
    if (!op.any_source) check_rank(b, op.peer, op.kind == P2PKind::SEND || op.kind == P2PKind::ISEND ? "destination" : "source", op.comm, null_ok);
    else comm_size(b, op.comm);
    if (!op.any_tag) {
      double t = op.tag.eval(frame);
      if (!(t >= 0 && t <= 1e9) || t != std::floor(t)) bad(b, "tag \"" + op.tag.text() + "\" = " + fmt(t) + " is not a non-negative integer");
    }
    check_size(b, op.size_bytes);
  }
  void visit(const Block& b, const Collective& op) {
    check_rank(b, op.root, "root", op.comm);
    check_size(b, op.size_bytes);
  }
  template <class T>
  void visit(const Block&, const T&) {}
};

}  // namespace

void check_for_run(const Skeleton& sk, const std::vector<double>& base, int P) {
  std::vector<double> frame = base;
  const CommLayout layout = layout_comms(sk, base, P);
  for (int r = 0; r < P; ++r) {
    bind_rank(sk, frame, r, layout);
    int g = select_group(sk, frame);
    if (g < 0)
      throw SkeletonError(sk.file, "/programs", "no rank group matches rank " + std::to_string(r) + " at P=" + std::to_string(P));
    Checker{sk, layout, frame, P, r}.body(sk.groups[g].body);
  }
}

}  // namespace mksim::skeletons
