// Small strict helpers over yaml-cpp: every error names file:line:col, the
// dotted path of the field and the offending value.
#pragma once

#include <yaml-cpp/yaml.h>

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

// Deep merge: maps merge recursively, anything else in `over` replaces `base`.
YAML::Node merge(const YAML::Node& base, const YAML::Node& over);

// Load a file; syntax errors become ConfigError with file:line:col.
YAML::Node load_file(const std::string& path);

}  // namespace flexplane::yaml
