// A per-process scratch directory for fuzz targets whose code under test
// reads files or databases. Not thread-safe; removed at exit.

#ifndef ZEUS_TESTS_FUZZ_FUZZ_TEMP_FILE_H_
#define ZEUS_TESTS_FUZZ_FUZZ_TEMP_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace zeus::fuzz {

// The scratch directory (created on first use under $TMPDIR or /tmp).
// Aborts when it cannot be created: a fuzz run without it proves nothing.
const std::string& ScratchDir();

// Writes `size` bytes at `data` to ScratchDir()/`name` (replacing it) and
// returns the path. Aborts on a write failure.
std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size);

}  // namespace zeus::fuzz

#endif  // ZEUS_TESTS_FUZZ_FUZZ_TEMP_FILE_H_
