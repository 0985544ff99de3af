// Typed, documented, defaulted parameters for schemes (and anything else that
// is configured by name).
//
// A component declares a plain struct of parameters with in-class defaults and
// a schema listing each field once: name (with its unit), doc, optional range.
// Values arrive as strings keyed by name (the config loader flattens YAML
// scalars; sequences arrive comma-joined), are parsed strictly, and every error
// names the field, the value and where it came from.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace flexplane {

// Thrown for any configuration error. what() is a complete, user-facing message.
// A NUL byte quoted from an input would end what() early, so it is written "\0"
// (other control bytes are escaped where messages are printed).
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(visible_nul(what)) {}
  explicit ConfigError(const char* what) : std::runtime_error(what) {}

 private:
  static std::string visible_nul(std::string s) {
    for (size_t i = s.find('\0'); i != std::string::npos; i = s.find('\0', i + 2)) s.replace(i, 1, "\\0");
    return s;
  }
};

// Thrown by a Params::validate() for a rule about particular fields: parse()
// reports it at the place of the first of `fields` the config wrote
// ("exp.yaml:5:41: routers.tor.queue_manager.k_pkts (queue_manager 'dctcp'):
// …"), else at the section's. The message names the fields itself.
class FieldError : public ConfigError {
 public:
  FieldError(std::vector<std::string> fields, const std::string& what) : ConfigError(what), fields(std::move(fields)) {}
  std::vector<std::string> fields;
};

// key -> value as written in the config, in file order; `where` says which
// file/section they came from (e.g. "exp.yaml: routers.tor.queue_manager").
// `key_where` optionally says where one key was written ("exp.yaml:6:7:
// routers.tor.queue_manager.k_pkts"): errors about that key name it instead.
struct ParamValues {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string where;
  std::map<std::string, std::string> key_where;
  void set(std::string key, std::string value) { entries.emplace_back(std::move(key), std::move(value)); }
  void set(std::string key, std::string value, const std::string& at) {
    if (at.empty()) key_where.erase(key);
    else key_where[key] = at;
    set(std::move(key), std::move(value));
  }
  const std::string& where_of(const std::string& key) const {
    const auto it = key_where.find(key);
    return it == key_where.end() ? where : it->second;
  }
};

namespace params_detail {

template <class T> struct TypeName;
template <> struct TypeName<uint32_t> { static const char* get() { return "uint32"; } };
template <> struct TypeName<uint64_t> { static const char* get() { return "uint64"; } };
template <> struct TypeName<int32_t> { static const char* get() { return "int32"; } };
template <> struct TypeName<double> { static const char* get() { return "double"; } };
template <> struct TypeName<bool> { static const char* get() { return "bool"; } };
template <> struct TypeName<std::string> { static const char* get() { return "string"; } };
template <> struct TypeName<std::vector<uint32_t>> { static const char* get() { return "list<uint32>"; } };

inline std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

template <class T>
bool parse(const std::string& raw, T& out) {
  const std::string s = trim(raw);
  if (s.empty()) return false;
  if constexpr (std::is_same_v<T, bool>) {
    if (s == "true" || s == "yes" || s == "on" || s == "1") return out = true, true;
    if (s == "false" || s == "no" || s == "off" || s == "0") return out = false, true;
    return false;
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = s;
    return true;
  } else if constexpr (std::is_same_v<T, double>) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (errno || *end || !std::isfinite(v)) return false;
    out = v;
    return true;
  } else if constexpr (std::is_same_v<T, std::vector<uint32_t>>) {
    out.clear();
    std::string item;
    std::stringstream ss(s);
    while (std::getline(ss, item, ',')) {
      uint32_t v;
      if (!parse(item, v)) return false;
      out.push_back(v);
    }
    return true;
  } else if constexpr (std::is_signed_v<T>) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 0);
    if (errno || *end || v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
    out = static_cast<T>(v);
    return true;
  } else {
    if (s[0] == '-') return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || *end || v > std::numeric_limits<T>::max()) return false;
    out = static_cast<T>(v);
    return true;
  }
}

template <class T>
std::string to_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_same_v<T, std::vector<uint32_t>>) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
  } else {
    std::ostringstream os;
    os << v;
    return os.str();
  }
}

}  // namespace params_detail

// Inclusive numeric bounds for a parameter (ignored for strings and bools).
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

// One declared parameter, type-erased so registries can list and apply it.
struct ParamDesc {
  std::string name;
  std::string doc;
  std::string type;
  std::string default_text;  // filled by the schema from a default-constructed struct
  Range range;
  std::function<void(void* params, const std::string& value, const std::string& where)> apply;
  std::function<std::string(const void* params)> show;
};

// Declare a parameter: param(&Params::k_pkts, "k_pkts", "mark above this many packets", {0, 1e6}).
template <class P, class T>
ParamDesc param(T P::*member, const char* name, const char* doc, Range range = {}) {
  ParamDesc d;
  d.name = name;
  d.doc = doc;
  d.type = params_detail::TypeName<T>::get();
  d.range = range;
  d.apply = [member, range, n = std::string(name)](void* p, const std::string& value, const std::string& where) {
    T v{};
    if (!params_detail::parse(value, v))
      throw ConfigError(where + ": parameter '" + n + "': cannot parse '" + value + "' as " +
                        params_detail::TypeName<T>::get());
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      if (static_cast<double>(v) < range.min || static_cast<double>(v) > range.max) {
        std::ostringstream os;
        os << where << ": parameter '" << n << "': value " << value << " is outside [" << range.min << ", "
           << range.max << "]";
        throw ConfigError(os.str());
      }
    }
    static_cast<P*>(p)->*member = std::move(v);
  };
  d.show = [member](const void* p) { return params_detail::to_text(static_cast<const P*>(p)->*member); };
  return d;
}

// The list of parameters of one Params struct.
template <class P>
class ParamSchema {
 public:
  ParamSchema() = default;
  explicit ParamSchema(std::vector<ParamDesc> descs) : descs_(std::move(descs)) {
    const P defaults{};
    for (auto& d : descs_) d.default_text = d.show(&defaults);
  }

  const std::vector<ParamDesc>& descs() const { return descs_; }

  // Parse `values` over defaults. Unknown keys and bad values throw ConfigError
  // naming the field; P::validate(where) (if declared) checks cross-field rules
  // (throwing ConfigError, or FieldError to be placed at a field).
  P parse(const ParamValues& values, const std::string& component) const {
    P p{};
    const std::string where = values.where.empty() ? component : values.where + " (" + component + ")";
    for (const auto& [key, value] : values.entries) {
      const std::string at = values.key_where.count(key) ? values.where_of(key) + " (" + component + ")" : where;
      const ParamDesc* d = find(key);
      if (!d) {
        std::string known;
        for (const auto& x : descs_) known += (known.empty() ? "" : ", ") + x.name;
        throw ConfigError(at + ": unknown parameter '" + key + "'" +
                          (known.empty() ? " (this component takes no parameters)" : " (known: " + known + ")"));
      }
      d->apply(&p, value, at);
    }
    if constexpr (has_validate<P>::value) {
      try {
        p.validate(where);
      } catch (const FieldError& e) {
        for (const auto& f : e.fields)
          if (values.key_where.count(f)) throw ConfigError(values.where_of(f) + " (" + component + "): " + e.what());
        throw ConfigError(where + ": " + e.what());
      }
    }
    return p;
  }

  // name=value pairs of a resolved Params, for run metadata.
  std::vector<std::pair<std::string, std::string>> show(const P& p) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& d : descs_) out.emplace_back(d.name, d.show(&p));
    return out;
  }

 private:
  template <class Q, class = void> struct has_validate : std::false_type {};
  template <class Q>
  struct has_validate<Q, std::void_t<decltype(std::declval<const Q&>().validate(std::string()))>>
      : std::true_type {};

  const ParamDesc* find(const std::string& name) const {
    for (const auto& d : descs_)
      if (d.name == name) return &d;
    return nullptr;
  }

  std::vector<ParamDesc> descs_;
};

// For components without parameters.
struct NoParams {};

// What the registry needs of anything configured by name (api/registry.h):
// its Params type and a way to set them. Components, generic routers,
// topology kinds and traffic patterns all derive from it.
template <class P>
class WithParams {
 public:
  using Params = P;
  const P& params() const { return params_; }
  void set_params(const P& p) { params_ = p; }

 protected:
  P params_{};
};

}  // namespace flexplane
