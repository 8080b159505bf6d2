#include "tests/fuzz/fuzz_temp_file.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace zeus::fuzz {
namespace {

std::string* dir_path = nullptr;

void RemoveScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(*dir_path, ignored);
}

}  // namespace

const std::string& ScratchDir() {
  if (dir_path == nullptr) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/zeus-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("zeus fuzz: mkdtemp");
      std::abort();
    }
    dir_path = new std::string(pattern);
    std::atexit(RemoveScratchDir);
  }
  return *dir_path;
}

std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size) {
  std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "zeus fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace zeus::fuzz
