// docs/schemes.md must describe what the registry holds: every classifier, queue manager,
// scheduler and load balancer has a "### <kind> `<name>`" section whose parameter rows give each parameter's
// name, type and default as the code declares them, and a meaning that starts with the code's
// doc; every preset has its row in the presets table. Nothing stale either: no section for a
// component and no preset row for a scheme that is not registered. Each problem is reported
// as "docs/schemes.md:LINE: what is wrong: what to write", all of them at once.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "api/registry.h"

using namespace flexplane;

namespace {

const char* const kDoc = "docs/schemes.md";

std::vector<std::string> doc_lines() {
  std::ifstream in(FLEXPLANE_SOURCE_DIR "/docs/schemes.md");
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> cells(const std::string& row) {  // "| a | b |" -> {"a", "b"}, backticks removed
  std::vector<std::string> out;
  std::string cell;
  std::stringstream ss(row.substr(1));
  while (std::getline(ss, cell, '|')) {
    std::string t;
    for (char c : cell)
      if (c != '`') t += c;
    out.push_back(params_detail::trim(t));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

std::string at(size_t index) { return std::string(kDoc) + ":" + std::to_string(index + 1); }
bool is_row(const std::string& line) { return line.rfind("| `", 0) == 0; }
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " | ") + x;
  return s;
}

// The row a parameter's declaration asks for (its meaning may go on after the code's doc).
std::string wanted_row(const ParamDesc& d) {
  return "| `" + d.name + "` | " + d.type + " | " + d.default_text + " | " + d.doc + " |";
}

template <class Base>
void check_components(const std::vector<std::string>& lines, std::vector<std::string>& problems) {
  const std::string kind = KindName<Base>::get();
  const std::string prefix = "### " + kind + " `";
  for (const auto& [name, info] : Registry<Base>::instance().all()) {
    if (name.rfind("test_", 0) == 0) continue;  // registered by tests, not part of the product
    const std::string heading = prefix + name + "`";
    size_t sec = 0;
    while (sec < lines.size() && lines[sec] != heading) ++sec;
    if (sec == lines.size()) {
      std::string want;
      for (const ParamDesc& d : info.params) want += "\n    " + wanted_row(d);
      problems.push_back(std::string(kDoc) + ": no section \"" + heading + "\" for the registered " + kind + " '" +
                         name + "': add it" +
                         (info.params.empty() ? std::string(" (it takes no parameters)")
                                              : ", with a table | parameter | type | default | meaning | and the rows" +
                                                    want));
      continue;
    }
    std::vector<std::pair<size_t, std::vector<std::string>>> rows;  // parameter rows of this section
    for (size_t i = sec + 1; i < lines.size() && lines[i].rfind("#", 0) != 0; ++i)
      if (is_row(lines[i])) rows.emplace_back(i, cells(lines[i]));
    for (size_t i = 0; i < std::max(rows.size(), info.params.size()); ++i) {
      if (i >= rows.size()) {
        problems.push_back(at(sec) + ": " + heading + ": no row for parameter '" + info.params[i].name +
                           "': add " + wanted_row(info.params[i]));
        continue;
      }
      const auto& [line, row] = rows[i];
      if (i >= info.params.size()) {
        problems.push_back(at(line) + ": " + heading + ": row '" + joined(row) + "' names no parameter of the " +
                           kind + " (stale: remove it)");
        continue;
      }
      const ParamDesc& d = info.params[i];
      if (row.size() != 4 || row[0] != d.name || row[1] != d.type || row[2] != d.default_text ||
          row[3].rfind(d.doc, 0) != 0)
        problems.push_back(at(line) + ": " + heading + ": row '" + joined(row) + "' does not match parameter " +
                           std::to_string(i + 1) + " as declared: want " + wanted_row(d) +
                           " (the meaning may go on after the code's doc)");
    }
  }
  // Sections for components that are not registered (renamed or removed).
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(prefix, 0) == 0 && lines[i].back() == '`') {
      const std::string name = lines[i].substr(prefix.size(), lines[i].size() - prefix.size() - 1);
      if (!Registry<Base>::instance().find(name))
        problems.push_back(at(i) + ": section for " + kind + " '" + name + "', which is not registered (stale: "
                           "remove it, or register the " + kind + ")");
    }
}

void check_presets(const std::vector<std::string>& lines, std::vector<std::string>& problems) {
  // The table under "## Presets", up to the next heading.
  size_t first = 0;
  while (first < lines.size() && lines[first] != "## Presets") ++first;
  if (first == lines.size()) {
    problems.push_back(std::string(kDoc) + ": no \"## Presets\" section (the table of scheme presets)");
    return;
  }
  std::map<std::string, std::pair<size_t, std::vector<std::string>>> rows;  // preset -> (line, cells)
  for (size_t i = first + 1; i < lines.size() && lines[i].rfind("#", 0) != 0; ++i)
    if (is_row(lines[i])) {
      const std::vector<std::string> row = cells(lines[i]);
      if (!SchemeRegistry::instance().find(row[0]))
        problems.push_back(at(i) + ": preset row '" + row[0] + "' names no registered scheme (stale: remove it)");
      rows[row[0]] = {i, row};
    }
  for (const auto& [name, p] : SchemeRegistry::instance().all()) {
    if (name.rfind("test_", 0) == 0) continue;
    const std::vector<std::string> want = {name, p.classifier, p.queue_manager, p.scheduler, p.endpoint_priority};
    const std::string want_row = "| `" + name + "` | `" + p.classifier + "` | `" + p.queue_manager + "` | `" +
                                 p.scheduler + "` | " + p.endpoint_priority + " |";
    const auto it = rows.find(name);
    if (it == rows.end())
      problems.push_back(at(first) + ": ## Presets: no row for the registered scheme '" + name + "': add " + want_row);
    else if (it->second.second != want)
      problems.push_back(at(it->second.first) + ": preset row '" + name + "' says '" + joined(it->second.second) +
                         "' but the registry has: " + want_row);
  }
}

std::vector<std::string> doc_problems(const std::vector<std::string>& lines) {
  std::vector<std::string> problems;
  check_components<ClassifierBase>(lines, problems);
  check_components<QueueManagerBase>(lines, problems);
  check_components<SchedulerBase>(lines, problems);
  check_components<LoadBalancerBase>(lines, problems);
  check_presets(lines, problems);
  return problems;
}

bool any_is(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p == text) return true;
  return false;
}
bool any_starts(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.rfind(text, 0) == 0) return true;
  return false;
}

size_t index_of(const std::vector<std::string>& lines, const std::string& line) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i] == line) return i;
  FAIL("docs/schemes.md has no line " << line);
  return 0;
}

}  // namespace

TEST_CASE("docs/schemes.md matches the registry", "[schemes][docs]") {
  const std::vector<std::string> problems = doc_problems(doc_lines());
  for (const auto& p : problems) FAIL_CHECK(p);
  REQUIRE(problems.empty());
}

TEST_CASE("docs/schemes.md problems say which section or row is missing or stale", "[schemes][docs]") {
  const std::vector<std::string> doc = doc_lines();
  REQUIRE(doc_problems(doc).empty());

  SECTION("a missing section") {
    std::vector<std::string> lines = doc;
    lines[index_of(lines, "### queue_manager `dctcp`")] = "### queue_manager `dctcp_removed`";
    const auto problems = doc_problems(lines);
    CHECK(any_starts(problems, "docs/schemes.md: no section \"### queue_manager `dctcp`\" for the registered "
                               "queue_manager 'dctcp': add it, with a table"));
    CHECK(any_starts(problems, "docs/schemes.md:" + std::to_string(index_of(doc, "### queue_manager `dctcp`") + 1) +
                                   ": section for queue_manager 'dctcp_removed', which is not registered (stale"));
  }
  SECTION("a stale preset row, and a missing one") {
    std::vector<std::string> lines = doc;
    const size_t row = index_of(lines, "| `codel` | `single` | `codel` | `fifo` | none |");
    lines[row] = "| `sojourn_removed` | `single` | `sojourn_removed` | `fifo` | none |";
    const auto problems = doc_problems(lines);
    CHECK(any_is(problems, "docs/schemes.md:" + std::to_string(row + 1) +
                               ": preset row 'sojourn_removed' names no registered scheme (stale: remove it)"));
    CHECK(any_starts(problems, "docs/schemes.md:" + std::to_string(index_of(doc, "## Presets") + 1) +
                                   ": ## Presets: no row for the registered scheme 'codel': add | `codel` |"));
  }
  SECTION("a missing and a wrong parameter row") {
    std::vector<std::string> lines = doc;
    const size_t k = index_of(lines, "### queue_manager `dctcp`");
    size_t row = k;
    while (lines[row].rfind("| `k_pkts`", 0) != 0) ++row;
    lines.erase(lines.begin() + static_cast<long>(row));  // k_pkts gone: capacity_pkts is now first
    const auto problems = doc_problems(lines);
    CHECK(any_starts(problems, "docs/schemes.md:" + std::to_string(row + 1) +
                                   ": ### queue_manager `dctcp`: row 'capacity_pkts | uint32 | 1024 | tail-drop limit, "
                                   "packets' does not match parameter 1 as declared: want | `k_pkts` | uint32 | 65 |"));
    CHECK(any_starts(problems, "docs/schemes.md:" + std::to_string(k + 1) +
                                   ": ### queue_manager `dctcp`: no row for parameter 'drop_non_ect': add | "));
  }
}

TEST_CASE("every preset names registered components; every parameter is documented", "[schemes]") {
  for (const auto& [name, p] : SchemeRegistry::instance().all()) {
    INFO("preset " << name);
    REQUIRE(Registry<ClassifierBase>::instance().find(p.classifier));
    REQUIRE(Registry<QueueManagerBase>::instance().find(p.queue_manager));
    REQUIRE(Registry<SchedulerBase>::instance().find(p.scheduler));
  }
  for (const char* scheme : {"droptail", "red", "dctcp", "hull", "priority_by_size", "priority_by_dscp", "round_robin",
                             "drr", "drr_by_source", "pfabric"})
    REQUIRE(SchemeRegistry::instance().find(scheme));
  auto documented = [](const auto& registry) {
    for (const auto& [name, info] : registry.all()) {
      INFO(name);
      REQUIRE_FALSE(info.doc.empty());
      for (const ParamDesc& d : info.params) REQUIRE_FALSE(d.doc.empty());
    }
  };
  documented(Registry<ClassifierBase>::instance());
  documented(Registry<QueueManagerBase>::instance());
  documented(Registry<SchedulerBase>::instance());
}
