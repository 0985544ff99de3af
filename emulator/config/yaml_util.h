// Small strict helpers over yaml-cpp: every error names file:line:col, the
// dotted path of the field and the offending value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "api/params.h"

namespace flexplane::yaml {

// "exp.yaml:12:5: routers.tor.scheme"
std::string where(const std::string& file, const YAML::Node& node, const std::string& path);

// Throw unless `node` is a map whose keys are all in `allowed`.
void require_map(const YAML::Node& node, const std::string& file, const std::string& path);
void check_keys(const YAML::Node& node, std::initializer_list<const char*> allowed, const std::string& file,
                const std::string& path);

// Typed scalar getters with range checks; `fallback` when the key is absent.
double get_double(const YAML::Node& map, const char* key, double fallback, double min, double max,
                  const std::string& file, const std::string& path);
uint64_t get_uint(const YAML::Node& map, const char* key, uint64_t fallback, uint64_t min, uint64_t max,
                  const std::string& file, const std::string& path);
bool get_bool(const YAML::Node& map, const char* key, bool fallback, const std::string& file,
              const std::string& path);
std::string get_string(const YAML::Node& map, const char* key, const std::string& fallback,
                       const std::string& file, const std::string& path);

// Flatten a map of scalars (and sequences of scalars, comma-joined) into
// ParamValues, skipping `skip` (e.g. "name").
ParamValues to_params(const YAML::Node& map, const char* skip, const std::string& file, const std::string& path);

// Deep merge of `over` into `base`, in place: maps merge recursively, a null
// in `over` keeps the base's value, anything else in `over` replaces it. The
// nodes of `over` are shared, not copied, so every value keeps its
// file:line:col (a copy would say 1:1); `base` must be a tree of its own (a
// fresh parse), `over` is not changed. `hook(base, over, path)` runs before
// two maps at `path` merge ("routers.tor"), to drop what `over` makes stale.
using MergeHook = std::function<void(YAML::Node& base, const YAML::Node& over, const std::string& path)>;
void merge_into(YAML::Node base, const YAML::Node& over, const std::string& path = "", const MergeHook& hook = {});
// load_file's checks again, after merging: aliases shared into a tree can make
// it cyclic or huge (`a: &x {}` with a variant `{a: {b: *x}}`).
void check_merged(const YAML::Node& root, const std::string& name);

// Load a file; syntax errors become ConfigError with file:line:col. The tree
// is then checked as a whole, since yaml-cpp accepts what we must not: a key
// given twice in one map (lookups would silently see the first), a key that
// is not a plain scalar, and aliases that make a small file a huge or cyclic
// tree (more than kMaxDepth levels or kMaxNodes nodes).
YAML::Node load_file(const std::string& path);
// The same in two steps: the file's bytes, and parsing text named `name`.
std::string read_file_text(const std::string& path);
YAML::Node parse_yaml(const std::string& text, const std::string& name);
inline constexpr int kMaxDepth = 64;
inline constexpr size_t kMaxNodes = 1'000'000;

// A file named by a config field (`where`: "exp.yaml:9:10: workload.trace"):
// throws ConfigError naming the field unless `path` is a readable regular
// file (a folder, a device, a missing or unreadable file are refused). With
// `where` == `path` (the config file itself) a pipe or /dev/stdin is allowed.
void require_input_file(const std::string& path, const std::string& where);

}  // namespace flexplane::yaml
