// docs/schemes.md must describe what the registry holds: every classifier, queue manager and
// scheduler has a "### <kind> `<name>`" section whose parameter rows give each parameter's
// name, type and default as the code declares them, and a meaning that starts with the code's
// doc; every preset has its row in the presets table.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "api/registry.h"

using namespace flexplane;

namespace {
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

template <class Base>
void check_components(const std::vector<std::string>& lines) {
  for (const auto& [name, info] : Registry<Base>::instance().all()) {
    if (name.rfind("test_", 0) == 0) continue;  // registered by tests, not part of the product
    const std::string heading = std::string("### ") + KindName<Base>::get() + " `" + name + "`";
    INFO(heading);
    size_t at = 0;
    while (at < lines.size() && lines[at] != heading) ++at;
    REQUIRE(at < lines.size());
    std::vector<std::vector<std::string>> rows;  // parameter rows of this section
    for (size_t i = at + 1; i < lines.size() && lines[i].rfind("#", 0) != 0; ++i)
      if (lines[i].rfind("| `", 0) == 0) rows.push_back(cells(lines[i]));
    REQUIRE(rows.size() == info.params.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const ParamDesc& d = info.params[i];
      INFO("parameter " << d.name);
      REQUIRE(rows[i].size() == 4);
      REQUIRE(rows[i][0] == d.name);
      REQUIRE(rows[i][1] == d.type);
      REQUIRE(rows[i][2] == d.default_text);
      REQUIRE(rows[i][3].rfind(d.doc, 0) == 0);
    }
  }
}
}  // namespace

TEST_CASE("docs/schemes.md matches the registry", "[schemes][docs]") {
  const auto lines = doc_lines();
  check_components<ClassifierBase>(lines);
  check_components<QueueManagerBase>(lines);
  check_components<SchedulerBase>(lines);
  for (const auto& [name, p] : SchemeRegistry::instance().all()) {
    const std::vector<std::string> want = {name, p.classifier, p.queue_manager, p.scheduler, p.endpoint_priority};
    bool found = false;
    for (const auto& line : lines) found = found || (line.rfind("| `", 0) == 0 && cells(line) == want);
    INFO("preset " << name);
    REQUIRE(found);
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
