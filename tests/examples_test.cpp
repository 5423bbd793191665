// The bundled example skeletons load and pass check_for_run at the scales they support, and the JSON
// Schemas of formats v1 and v2 agree with the strict reader (same ops, same required and allowed fields).
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#ifndef MKSIM_SOURCE_DIR
#error "compile with -DMKSIM_SOURCE_DIR=\"/path/to/repo\""
#endif

namespace {

using mksim::skeletons::SkeletonError;
using nlohmann::json;
namespace sk = mksim::skeletons;

const std::string kRoot = MKSIM_SOURCE_DIR;
const std::string kExamples = kRoot + "/skeletons/examples";
const std::string kSchema = kRoot + "/skeletons/schema/skeleton-v1.schema.json";
const std::string kSchemaV2 = kRoot + "/skeletons/schema/skeleton-v2.schema.json";
const std::string kSchemaV3 = kRoot + "/skeletons/schema/skeleton-v3.schema.json";

/** @brief An example and the rank counts it supports among the ones we test. */
struct Example {
  std::string file;
  std::vector<int> scales;
};

const std::vector<int> kScales = {4, 8, 16, 64, 128};

// Every bundled example; atm2d needs a power of two, pge2 an even P, master_worker P >= 2.
const std::vector<Example> kAll = {
    {"atm2d.json", kScales}, {"pge1.json", kScales}, {"pge2.json", kScales},
    {"cg.json", kScales},    {"master_worker.json", kScales}, {"atm1d.json", kScales},
    {"summa.json", kScales},
};

// The ops skeleton_io.cpp accepts (format v1).
const std::vector<std::string> kReaderOps = {"loop",   "if",     "compute", "send",      "recv",      "isend",
                                             "irecv",  "wait",   "waitall", "barrier",   "bcast",     "reduce",
                                             "allreduce", "gather", "scatter", "allgather", "alltoall"};
// Format v2 adds one.
const std::vector<std::string> kReaderOpsV2 = [] {
  std::vector<std::string> ops = kReaderOps;
  ops.push_back("region");
  return ops;
}();

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

void check_at(const sk::Skeleton& s, int P) {
  std::vector<double> frame = sk::bind_parameters(s, P, {});
  sk::check_for_run(s, frame, P);
}

std::string doc_with_body(const json& body, int version = 1) {
  json d = {{"format", "mksim-skeleton"}, {"version", version}, {"body", body}};
  return d.dump();
}

bool reader_accepts(const json& body, std::string* why = nullptr, int version = 1) {
  try {
    sk::parse_skeleton(doc_with_body(body, version), "test.json");
    return true;
  } catch (const SkeletonError& e) {
    if (why) *why = e.what();
    return false;
  }
}

// A valid value for each field name the schema uses in blocks.
json sample_value(const std::string& field) {
  if (field == "body" || field == "then" || field == "else") return json::array();
  if (field == "prob") return 0.5;
  if (field == "var") return "i";
  if (field == "req") return "r";
  if (field == "id" || field == "phase" || field == "doc" || field == "provenance" || field == "fit") return "x";
  if (field == "size") return 8;
  if (field == "name") return "solve";
  if (field == "dist") return {{"type", "normal"}, {"cv", 0.1}};
  if (field == "coin") return "c";
  if (field == "comm") return "world";
  return 1;  // count, cond, seconds, flops, peer, tag, root
}

}  // namespace

TEST(Examples, EveryFileInTheDirectoryLoads) {
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(kExamples))
    if (e.path().extension() == ".json") on_disk.insert(e.path().filename().string());
  for (const auto& e : kAll) EXPECT_TRUE(on_disk.count(e.file)) << e.file << " is missing";
  for (const auto& f : on_disk) EXPECT_NO_THROW(sk::load_skeleton(kExamples + "/" + f)) << f;
}

TEST(Examples, EveryExampleLoadsAndIsDocumented) {
  for (const auto& e : kAll) {
    SCOPED_TRACE(e.file);
    sk::Skeleton s;
    ASSERT_NO_THROW(s = sk::load_skeleton(kExamples + "/" + e.file));
    EXPECT_FALSE(s.name.empty());
    EXPECT_FALSE(s.description.empty());
    EXPECT_FALSE(s.params.empty());
    for (const auto& p : s.params) {
      EXPECT_FALSE(p.doc.empty()) << "parameter " << p.name << " has no doc";
      EXPECT_TRUE(p.default_value.has_value()) << "parameter " << p.name << " has no default";
    }
  }
}

TEST(Examples, CheckForRunAtSupportedScales) {
  for (const auto& e : kAll) {
    sk::Skeleton s = sk::load_skeleton(kExamples + "/" + e.file);
    for (int P : e.scales) {
      SCOPED_TRACE(e.file + " at P=" + std::to_string(P));
      EXPECT_NO_THROW(check_at(s, P));
    }
  }
}

TEST(Examples, PipelinesRunAtSmallAndOddScales) {
  sk::Skeleton pge1 = sk::load_skeleton(kExamples + "/pge1.json");
  for (int P : {1, 2, 3, 5, 7, 100}) EXPECT_NO_THROW(check_at(pge1, P)) << "pge1 at P=" << P;
  sk::Skeleton atm1d = sk::load_skeleton(kExamples + "/atm1d.json");
  for (int P : {1, 2, 3, 5, 7, 100, 1024}) EXPECT_NO_THROW(check_at(atm1d, P)) << "atm1d at P=" << P;
  sk::Skeleton cg = sk::load_skeleton(kExamples + "/cg.json");
  for (int P : {1, 2, 3, 5, 7, 100, 1024}) EXPECT_NO_THROW(check_at(cg, P)) << "cg at P=" << P;
  sk::Skeleton mw = sk::load_skeleton(kExamples + "/master_worker.json");
  for (int P : {2, 3, 5, 7, 100}) EXPECT_NO_THROW(check_at(mw, P)) << "master_worker at P=" << P;
  // More workers than tasks: some workers get none.
  std::vector<double> frame = sk::bind_parameters(mw, 16, {{"tasks", 5}});
  EXPECT_NO_THROW(sk::check_for_run(mw, frame, 16));
  sk::Skeleton pge2 = sk::load_skeleton(kExamples + "/pge2.json");
  for (int P : {2, 6, 10, 100}) EXPECT_NO_THROW(check_at(pge2, P)) << "pge2 at P=" << P;
  // K that does not divide M: the last block is partial.
  frame = sk::bind_parameters(pge2, 8, {{"K", 7}});
  EXPECT_NO_THROW(sk::check_for_run(pge2, frame, 8));
}

TEST(Examples, UnsupportedScalesAreRejected) {
  sk::Skeleton pge2 = sk::load_skeleton(kExamples + "/pge2.json");
  for (int P : {1, 3, 5, 7}) EXPECT_THROW(check_at(pge2, P), SkeletonError) << "pge2 at odd P=" << P;
  sk::Skeleton mw = sk::load_skeleton(kExamples + "/master_worker.json");
  EXPECT_THROW(check_at(mw, 1), SkeletonError);
}

TEST(Examples, SchemaIsValidJsonAndListsTheReadersOps) {
  json schema;
  ASSERT_NO_THROW(schema = read_json(kSchema));
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  const json& defs = schema.at("$defs");
  std::vector<std::string> ops = defs.at("op").at("enum").get<std::vector<std::string>>();
  std::vector<std::string> expected = kReaderOps;
  std::sort(ops.begin(), ops.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ops, expected);
  // Each op has its own definition, referenced from the block's oneOf.
  std::set<std::string> refs;
  for (const auto& r : defs.at("block").at("oneOf")) refs.insert(r.at("$ref").get<std::string>());
  for (const auto& op : kReaderOps) {
    EXPECT_TRUE(defs.contains("op_" + op)) << op;
    EXPECT_TRUE(refs.count("#/$defs/op_" + op)) << op;
  }
  // The reader rejects an op that is not in the list.
  EXPECT_FALSE(reader_accepts(json::array({{{"op", "frobnicate"}}})));
}

// Each op's fields in the schema of `version` against the reader reading that version.
void check_schema_fields(const std::string& schema, int version, const std::vector<std::string>& reader_ops) {
  const json defs = read_json(schema).at("$defs");
  auto reader_accepts = [version](const json& body, std::string* why = nullptr) {
    return ::reader_accepts(body, why, version);
  };
  for (const auto& op : reader_ops) {
    SCOPED_TRACE(op);
    const json& d = defs.at("op_" + op);
    EXPECT_EQ(d.at("additionalProperties"), false);
    std::vector<std::string> required = d.at("required").get<std::vector<std::string>>();
    // Alternatives ("exactly one of"), e.g. cond/prob for if, seconds/flops for compute.
    std::vector<std::vector<std::string>> alternatives = {{}};
    if (d.contains("oneOf")) {
      alternatives.clear();
      for (const auto& alt : d.at("oneOf")) alternatives.push_back(alt.at("required").get<std::vector<std::string>>());
    }
    // wait needs a request issued before it.
    json prefix = json::array();
    if (op == "wait") prefix.push_back({{"op", "isend"}, {"peer", 0}, {"size", 8}, {"req", "r"}});
    auto with = [&](const json& block) {
      json body = prefix;
      body.push_back(block);
      return body;
    };
    for (const auto& alt : alternatives) {
      json block = {{"op", op}};
      for (const auto& f : required)
        if (f != "op") block[f] = sample_value(f);
      for (const auto& f : alt) block[f] = sample_value(f);
      std::string why;
      EXPECT_TRUE(reader_accepts(with(block), &why)) << block.dump() << ": " << why;
      // Every required field is required by the reader too.
      for (const auto& f : required) {
        if (f == "op") continue;
        json less = block;
        less.erase(f);
        EXPECT_FALSE(reader_accepts(with(less))) << "reader accepts " << less.dump();
      }
      // Every optional field the schema allows is allowed by the reader.
      for (const auto& [f, _] : d.at("properties").items()) {
        if (block.contains(f)) continue;
        bool is_alternative = false;
        for (const auto& a : alternatives)
          is_alternative = is_alternative || std::find(a.begin(), a.end(), f) != a.end();
        if (is_alternative) continue;
        json more = block;
        more[f] = sample_value(f);
        // a field that needs others (dependentRequired: coin needs prob, coin_rank needs coin) gets them, unless
        // one is the other alternative (coin on a cond branch is an error, in the schema and the reader alike)
        bool other_alternative = false;
        for (std::string g = f; d.contains("dependentRequired") && d.at("dependentRequired").contains(g);) {
          const std::string dep = d.at("dependentRequired").at(g).at(0).get<std::string>();
          if (!more.contains(dep)) {
            for (const auto& a : alternatives)
              other_alternative = other_alternative || std::find(a.begin(), a.end(), dep) != a.end();
            more[dep] = sample_value(dep);
          }
          g = dep;
        }
        if (other_alternative) {
          EXPECT_FALSE(reader_accepts(with(more))) << "reader accepts " << more.dump();
          continue;
        }
        EXPECT_TRUE(reader_accepts(with(more), &why)) << more.dump() << ": " << why;
      }
      // Any other field is an error.
      json extra = block;
      extra["bogus"] = 1;
      EXPECT_FALSE(reader_accepts(with(extra))) << "reader accepts " << extra.dump();
    }
    if (alternatives.size() > 1) {  // neither and both of the alternatives are errors
      json none = {{"op", op}};
      for (const auto& f : required)
        if (f != "op") none[f] = sample_value(f);
      EXPECT_FALSE(reader_accepts(with(none))) << none.dump();
      json all = none;
      for (const auto& alt : alternatives)
        for (const auto& f : alt) all[f] = sample_value(f);
      EXPECT_FALSE(reader_accepts(with(all))) << all.dump();
    }
  }
}

TEST(Examples, SchemaFieldsMatchTheReader) { check_schema_fields(kSchema, 1, kReaderOps); }

TEST(Examples, SchemaV2FieldsMatchTheReader) { check_schema_fields(kSchemaV2, 2, kReaderOpsV2); }

TEST(Examples, SchemaV3FieldsMatchTheReader) { check_schema_fields(kSchemaV3, 3, kReaderOpsV2); }

// Format v3's communicators: every kind of the schema's `comm` with its required fields is read, without one it is
// refused, and any other field is an error.
TEST(Examples, SchemaV3CommunicatorsMatchTheReader) {
  const json defs = read_json(kSchemaV3).at("$defs");
  auto doc = [](const json& comm) {
    return json{{"format", "mksim-skeleton"}, {"version", 3}, {"comms", {{"agrid", {{"cart", "world"}, {"dims", {"P"}}}}, {"c", comm}}},
                {"body", json::array()}}
        .dump();
  };
  auto accepts = [](const std::string& text, std::string* why = nullptr) {
    try {
      sk::parse_skeleton(text, "t.json");
      return true;
    } catch (const SkeletonError& e) {
      if (why) *why = e.what();
      return false;
    }
  };
  auto sample = [](const std::string& f) -> json {
    if (f == "split" || f == "cart" || f == "dup" || f == "create" || f == "graph") return "world";
    if (f == "cart_sub") return "agrid";  // (keys are read in sorted order here: declared before "c")
    if (f == "dims") return json::array({"P"});
    if (f == "periods" || f == "remain") return json::array({true});
    if (f == "doc") return "x";
    return "0";  // color, key, members, size, nodes
  };
  std::set<std::string> kinds;
  for (const auto& alt : defs.at("comm").at("oneOf")) {
    json c = json::object();
    for (const auto& f : alt.at("required")) c[f.get<std::string>()] = sample(f.get<std::string>());
    kinds.insert(alt.at("required").at(0).get<std::string>());
    std::string why;
    EXPECT_TRUE(accepts(doc(c), &why)) << c.dump() << ": " << why;
    for (const auto& [f, _] : alt.at("properties").items()) {
      json more = c;
      more[f] = sample(f);
      EXPECT_TRUE(accepts(doc(more), &why)) << more.dump() << ": " << why;
    }
    for (const auto& f : alt.at("required")) {
      json less = c;
      less.erase(f.get<std::string>());
      EXPECT_FALSE(accepts(doc(less))) << less.dump();
    }
    json extra = c;
    extra["bogus"] = 1;
    EXPECT_FALSE(accepts(doc(extra))) << extra.dump();
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"split", "cart", "cart_sub", "dup", "create", "graph"}));
  // a communicator in a version 2 file, and "comm" on an op of one, are errors naming the place
  std::string why;
  EXPECT_FALSE(accepts(R"({"format":"mksim-skeleton","version":2,"comms":{"a":{"dup":"world"}},"body":[]})", &why));
  EXPECT_NE(why.find("/comms: \"comms\" (communicators) needs version 3 (this file says \"version\": 2)"), std::string::npos) << why;
  EXPECT_FALSE(accepts(R"({"format":"mksim-skeleton","version":2,"body":[{"op":"barrier","comm":"world"}]})", &why));
  EXPECT_NE(why.find("/body/0/comm: \"comm\" on an op needs version 3"), std::string::npos) << why;
}

TEST(Examples, SchemaV2ListsTheReadersOpsAndDistributions) {
  const json schema = read_json(kSchemaV2);
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  const json& defs = schema.at("$defs");
  std::vector<std::string> ops = defs.at("op").at("enum").get<std::vector<std::string>>();
  std::vector<std::string> expected = kReaderOpsV2;
  std::sort(ops.begin(), ops.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ops, expected);
  std::set<std::string> refs;
  for (const auto& r : defs.at("block").at("oneOf")) refs.insert(r.at("$ref").get<std::string>());
  for (const auto& op : kReaderOpsV2) EXPECT_TRUE(refs.count("#/$defs/op_" + op)) << op;
  // The distribution types of the schema are the reader's, with the same fields.
  const json compute = json::array({{{"op", "compute"}, {"seconds", 1}}});
  auto with_dist = [&](const json& dist) {
    json body = compute;
    body[0]["dist"] = dist;
    return body;
  };
  std::set<std::string> types;
  for (const auto& alt : defs.at("dist").at("oneOf")) {
    const json& t = alt.at("properties").at("type");
    std::vector<std::string> names = t.contains("enum") ? t.at("enum").get<std::vector<std::string>>()
                                                        : std::vector<std::string>{t.at("const").get<std::string>()};
    EXPECT_EQ(alt.at("additionalProperties"), false);
    for (const auto& name : names) {
      types.insert(name);
      json d = {{"type", name}};
      for (const auto& f : alt.at("required"))
        if (f != "type") d[f.get<std::string>()] = f == "quantiles" ? json::array({0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.3, 1.4, 1.5}) : json(0.1);
      std::string why;
      EXPECT_TRUE(reader_accepts(with_dist(d), &why, 2)) << d.dump() << ": " << why;
      for (const auto& f : alt.at("required")) {
        json less = d;
        less.erase(f.get<std::string>());
        EXPECT_FALSE(reader_accepts(with_dist(less), nullptr, 2)) << less.dump();
      }
      json extra = d;
      extra["bogus"] = 1;
      EXPECT_FALSE(reader_accepts(with_dist(extra), nullptr, 2)) << extra.dump();
      // every value of the schema's optional "draw" is read; another is refused at its place
      for (const auto& v : alt.at("properties").at("draw").at("enum")) {
        json drawn = d;
        drawn["draw"] = v;
        EXPECT_TRUE(reader_accepts(with_dist(drawn), &why, 2)) << drawn.dump() << ": " << why;
      }
      json bad = d;
      bad["draw"] = "each";
      EXPECT_FALSE(reader_accepts(with_dist(bad), &why, 2)) << bad.dump();
      EXPECT_NE(why.find("/dist/draw: must be \"same\""), std::string::npos) << why;
    }
  }
  EXPECT_EQ(types, (std::set<std::string>{"normal", "lognormal", "uniform", "empirical"}));
  EXPECT_FALSE(reader_accepts(with_dist({{"type", "gamma"}, {"cv", 0.1}}), nullptr, 2));
}

TEST(Examples, SchemaTopLevelMatchesTheReader) {
  const json schema = read_json(kSchema);
  EXPECT_EQ(schema.at("additionalProperties"), false);
  std::set<std::string> props;
  for (const auto& [k, _] : schema.at("properties").items()) props.insert(k);
  const std::set<std::string> reader = {"format", "version", "name", "description", "params", "let",
                                        "programs", "body", "phases", "provenance", "doc"};
  EXPECT_EQ(props, reader);
  std::set<std::string> group;
  for (const auto& [k, _] : schema.at("properties").at("programs").at("items").at("properties").items()) group.insert(k);
  EXPECT_EQ(group, (std::set<std::string>{"ranks", "body", "doc", "phase"}));
  // The version is pinned to 1 (2 in the v2 schema, whose top level is otherwise the same), and the reader
  // reads both and rejects any other; version 1 files cannot use what version 2 adds.
  EXPECT_EQ(schema.at("properties").at("version").at("const"), 1);
  const json schema2 = read_json(kSchemaV2);
  EXPECT_EQ(schema2.at("properties").at("version").at("const"), 2);
  json top2 = schema2.at("properties");
  top2.erase("version");
  json top1 = schema.at("properties");
  top1.erase("version");
  EXPECT_EQ(top1, top2);
  json v2 = {{"format", "mksim-skeleton"}, {"version", 2}, {"body", json::array()}};
  EXPECT_NO_THROW(sk::parse_skeleton(v2.dump()));
  json v3 = {{"format", "mksim-skeleton"}, {"version", 3}, {"body", json::array()}};
  EXPECT_NO_THROW(sk::parse_skeleton(v3.dump()));
  json v4 = {{"format", "mksim-skeleton"}, {"version", 4}, {"body", json::array()}};
  EXPECT_THROW(sk::parse_skeleton(v4.dump()), SkeletonError);
  // the v3 schema's top level is v2's with "comms"
  const json schema3 = read_json(kSchemaV3);
  EXPECT_EQ(schema3.at("properties").at("version").at("const"), 3);
  json top3 = schema3.at("properties");
  top3.erase("version");
  EXPECT_TRUE(top3.contains("comms"));
  top3.erase("comms");
  top3.erase("let");  // (its description mentions the communicators)
  json top2b = top2;
  top2b.erase("let");
  EXPECT_EQ(top2b, top3);
  for (const auto& name : schema3.at("$defs").at("name").at("not").at("enum")) {
    json d = {{"format", "mksim-skeleton"}, {"version", 3}, {"params", {{name.get<std::string>(), 1}}}, {"body", json::array()}};
    EXPECT_THROW(sk::parse_skeleton(d.dump()), SkeletonError) << name;
  }
  EXPECT_FALSE(reader_accepts(json::array({{{"op", "region"}, {"name", "a"}, {"body", json::array()}}})));
  EXPECT_FALSE(reader_accepts(json::array({{{"op", "compute"}, {"seconds", 1}, {"dist", sample_value("dist")}}})));
  // The reserved names of the schema are the reader's.
  for (const auto& name : schema.at("$defs").at("name").at("not").at("enum")) {
    json d = {{"format", "mksim-skeleton"}, {"version", 1}, {"params", {{name.get<std::string>(), 1}}}, {"body", json::array()}};
    EXPECT_THROW(sk::parse_skeleton(d.dump()), SkeletonError) << name;
  }
}
