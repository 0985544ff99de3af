#include "emulator/config/yaml_util.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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
    const std::string at = where(file, kv.first, path + "." + key);  // errors about this key point at it
    if (kv.second.IsScalar()) {
      out.set(key, kv.second.Scalar(), at);
    } else if (kv.second.IsSequence()) {
      std::string joined;
      for (const auto& item : kv.second) {
        if (!item.IsScalar()) throw ConfigError(where(file, item, path + "." + key) + ": expected a list of values");
        joined += (joined.empty() ? "" : ",") + item.Scalar();
      }
      out.set(key, joined, at);
    } else {
      throw ConfigError(where(file, kv.second, path + "." + key) + ": expected a value or a list of values");
    }
  }
  return out;
}

void merge_into(YAML::Node base, const YAML::Node& over, const std::string& path, const MergeHook& hook) {
  if (!over.IsMap() || !base.IsMap() || base.is(over)) return;  // an alias merged into itself changes nothing
  if (hook) hook(base, over, path);
  const YAML::Node& cbase = base;  // const lookups: no zombie keys
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    const YAML::Node old = cbase[key];
    if (!old) {
      base.force_insert(kv.first, kv.second);  // the variant's own key and value nodes: their marks
    } else if (kv.second.IsNull()) {
      // `key: ~` in a variant keeps the base's value
    } else if (old.IsMap() && kv.second.IsMap()) {
      merge_into(base[key], kv.second, path.empty() ? key : path + "." + key, hook);
    } else {
      base[key] = kv.second;  // shares the node (and its mark); the base's key keeps its place
    }
  }
}

namespace {

std::string line_col(const YAML::Mark& m) { return std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1); }

// See load_file. `budget` counts the nodes still allowed.
void check_tree(const YAML::Node& node, const std::string& file, const std::string& path, int depth,
                size_t& budget) {
  if (depth > kMaxDepth || budget == 0)
    throw ConfigError(where(file, node, path.size() > 60 ? path.substr(0, 60) + "..." : path) +
                      ": nested too deeply or too large (more than " +
                      std::to_string(kMaxDepth) + " levels or " + std::to_string(kMaxNodes) +
                      " values, counting what aliases repeat)");
  --budget;
  const std::string prefix = path.empty() ? "" : path + ".";
  if (node.IsSequence()) {
    size_t i = 0;
    for (const auto& item : node) check_tree(item, file, prefix + std::to_string(i++), depth + 1, budget);
  } else if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar())
        throw ConfigError(where(file, kv.first, path) + ": a key must be a plain name, not a list or a mapping");
      const std::string key = kv.first.Scalar();
      if (auto [it, fresh] = seen.emplace(key, kv.first.Mark()); !fresh)
        throw ConfigError(where(file, kv.first, prefix + key) + ": key '" + key + "' given twice (first at " + file +
                          ":" + line_col(it->second) + ")");
      check_tree(kv.second, file, prefix + key, depth + 1, budget);
    }
  }
}

}  // namespace

void require_input_file(const std::string& path, const std::string& at) {
  namespace fs = std::filesystem;
  // "exp.yaml: is a folder" for the config itself; "<field>: 'x' is a folder" for a field.
  const std::string what = at == path ? at + ": " : at + ": '" + path + "' ";
  const std::string cannot_open = at == path ? at + ": cannot open: " : at + ": cannot open '" + path + "': ";
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) throw ConfigError(what + "is a folder, not a file");
  if (!fs::exists(st)) throw ConfigError(cannot_open + "no such file");
  // A field's file is read whole (a device like /dev/zero would never end); the
  // config itself may also come from a pipe (/dev/stdin).
  if (!fs::is_regular_file(st) && !(at == path && (fs::is_character_file(st) || fs::is_fifo(st))))
    throw ConfigError(what + "is not a regular file");
  std::ifstream in(path);
  if (!in) throw ConfigError(cannot_open + std::strerror(errno));
}

std::string read_file_text(const std::string& path) {
  require_input_file(path, path);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": read error");
  return text.str();
}

YAML::Node parse_yaml(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(name + ":" + line_col(e.mark) + ": YAML syntax error: " + e.msg);
  }
  size_t budget = kMaxNodes;
  check_tree(root, name, "", 0, budget);
  return root;
}

YAML::Node load_file(const std::string& path) { return parse_yaml(read_file_text(path), path); }

void check_merged(const YAML::Node& root, const std::string& name) {
  size_t budget = kMaxNodes;
  check_tree(root, name, "", 0, budget);
}

}  // namespace flexplane::yaml
