#include "emulator/config/yaml_util.h"

#include <fstream>
#include <sstream>

namespace flexplane::yaml {

std::string where(const std::string& file, const YAML::Node& node, const std::string& path) {
  std::ostringstream os;
  os << file;
  if (node.IsDefined() && node.Mark().line >= 0) os << ":" << node.Mark().line + 1 << ":" << node.Mark().column + 1;
  if (!path.empty()) os << ": " << path;
  return os.str();
}

void require_map(const YAML::Node& node, const std::string& file, const std::string& path) {
  if (!node.IsMap()) throw ConfigError(where(file, node, path) + ": expected a mapping (key: value ...)");
}

void check_keys(const YAML::Node& node, std::initializer_list<const char*> allowed, const std::string& file,
                const std::string& path) {
  require_map(node, file, path);
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string known;
      for (const char* a : allowed) known += (known.empty() ? "" : ", ") + std::string(a);
      throw ConfigError(where(file, kv.first, path.empty() ? key : path + "." + key) + ": unknown key '" + key +
                        "' (known: " + known + ")");
    }
  }
}

namespace {
std::string scalar(const YAML::Node& map, const char* key, const std::string& file, const std::string& path) {
  const YAML::Node v = map[key];
  if (!v.IsScalar())
    throw ConfigError(where(file, v, path + "." + key) + ": expected a single value");
  return v.Scalar();
}
}  // namespace

double get_double(const YAML::Node& map, const char* key, double fallback, double min, double max,
                  const std::string& file, const std::string& path) {
  if (!map[key]) return fallback;
  const std::string s = scalar(map, key, file, path);
  double v;
  if (!params_detail::parse(s, v) || v < min || v > max) {
    std::ostringstream os;
    os << where(file, map[key], path + "." + key) << ": '" << s << "' is not a number in [" << min << ", " << max
       << "]";
    throw ConfigError(os.str());
  }
  return v;
}

uint64_t get_uint(const YAML::Node& map, const char* key, uint64_t fallback, uint64_t min, uint64_t max,
                  const std::string& file, const std::string& path) {
  if (!map[key]) return fallback;
  const std::string s = scalar(map, key, file, path);
  uint64_t v;
  if (!params_detail::parse(s, v) || v < min || v > max)
    throw ConfigError(where(file, map[key], path + "." + key) + ": '" + s + "' is not an integer in [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
  return v;
}

bool get_bool(const YAML::Node& map, const char* key, bool fallback, const std::string& file,
              const std::string& path) {
  if (!map[key]) return fallback;
  const std::string s = scalar(map, key, file, path);
  bool v;
  if (!params_detail::parse(s, v))
    throw ConfigError(where(file, map[key], path + "." + key) + ": '" + s + "' is not true/false");
  return v;
}

std::string get_string(const YAML::Node& map, const char* key, const std::string& fallback, const std::string& file,
                       const std::string& path) {
  if (!map[key]) return fallback;
  return scalar(map, key, file, path);
}

ParamValues to_params(const YAML::Node& map, const char* skip, const std::string& file, const std::string& path) {
  require_map(map, file, path);
  ParamValues out;
  out.where = where(file, map, path);
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (skip && key == skip) continue;
    if (kv.second.IsScalar()) {
      out.set(key, kv.second.Scalar());
    } else if (kv.second.IsSequence()) {
      std::string joined;
      for (const auto& item : kv.second) {
        if (!item.IsScalar()) throw ConfigError(where(file, item, path + "." + key) + ": expected a list of values");
        joined += (joined.empty() ? "" : ",") + item.Scalar();
      }
      out.set(key, joined);
    } else {
      throw ConfigError(where(file, kv.second, path + "." + key) + ": expected a value or a list of values");
    }
  }
  return out;
}

YAML::Node merge(const YAML::Node& base, const YAML::Node& over) {
  if (!over.IsDefined() || over.IsNull()) return YAML::Clone(base);
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.as<std::string>();
    out[key] = base[key] ? merge(base[key], kv.second) : YAML::Clone(kv.second);
  }
  return out;
}

YAML::Node load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open file");
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
}

}  // namespace flexplane::yaml
