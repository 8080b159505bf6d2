#include "tests/testing/temp_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "zeus/util/env.h"

namespace zeus::testing {

TempDir::TempDir() {
  std::string base = GetEnv("TMPDIR").value_or("/tmp");
  std::string templ = base + "/zeus_test_XXXXXX";
  char* made = mkdtemp(templ.data());
  if (made == nullptr) throw std::runtime_error("mkdtemp failed under " + base);
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::WriteFile(const std::string& name, const std::string& contents) const {
  std::string path = File(name);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << contents;
  return path;
}

std::string DataDir() { return std::string(ZEUS_SOURCE_DIR) + "/data"; }

}  // namespace zeus::testing
