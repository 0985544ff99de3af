// Test helper: a fresh folder under /tmp for one test, removed with its
// contents when the TempDir goes out of scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace flexplane::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const char* stem = "fp_test") {
    std::string tmpl = std::string("/tmp/") + stem + "_XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace flexplane::testing
