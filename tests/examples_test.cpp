// The bundled example skeletons load and pass check_for_run at the scales they support, and the JSON
// Schema of format v1 agrees with the strict reader (same ops, same required and allowed fields).
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

/** @brief An example and the rank counts it supports among the ones we test. */
struct Example {
  std::string file;
  std::vector<int> scales;
};

const std::vector<int> kScales = {4, 8, 16, 64, 128};

// Every bundled example; atm2d needs a power of two, pge2 an even P, master_worker P >= 2.
const std::vector<Example> kAll = {
    {"atm2d.json", kScales}, {"pge1.json", kScales}, {"pge2.json", kScales},
    {"cg.json", kScales},    {"master_worker.json", kScales},
};

// The ops skeleton_io.cpp accepts (format v1).
const std::vector<std::string> kReaderOps = {"loop",   "if",     "compute", "send",      "recv",      "isend",
                                             "irecv",  "wait",   "waitall", "barrier",   "bcast",     "reduce",
                                             "allreduce", "gather", "scatter", "allgather", "alltoall"};

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

void check_at(const sk::Skeleton& s, int P) {
  std::vector<double> frame = sk::bind_parameters(s, P, {});
  sk::check_for_run(s, frame, P);
}

std::string doc_with_body(const json& body) {
  json d = {{"format", "mksim-skeleton"}, {"version", 1}, {"body", body}};
  return d.dump();
}

bool reader_accepts(const json& body, std::string* why = nullptr) {
  try {
    sk::parse_skeleton(doc_with_body(body), "test.json");
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

TEST(Examples, SchemaFieldsMatchTheReader) {
  const json defs = read_json(kSchema).at("$defs");
  for (const auto& op : kReaderOps) {
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
  // The version is pinned to 1, and the reader rejects any other.
  EXPECT_EQ(schema.at("properties").at("version").at("const"), 1);
  json v2 = {{"format", "mksim-skeleton"}, {"version", 2}, {"body", json::array()}};
  EXPECT_THROW(sk::parse_skeleton(v2.dump()), SkeletonError);
  // The reserved names of the schema are the reader's.
  for (const auto& name : schema.at("$defs").at("name").at("not").at("enum")) {
    json d = {{"format", "mksim-skeleton"}, {"version", 1}, {"params", {{name.get<std::string>(), 1}}}, {"body", json::array()}};
    EXPECT_THROW(sk::parse_skeleton(d.dump()), SkeletonError) << name;
  }
}
