#include "tests/optimizer/power_limit/file_backed_gpu.h"

#include <fstream>

#include "zeus/util/file.h"
#include "zeus/util/strings.h"

namespace zeus::testing {

FileBackedGpu::FileBackedGpu(FakeGpu* inner, std::string path)
    : inner_(inner), path_(std::move(path)) {
  Persist();
}

Status FileBackedGpu::SetPowerLimitMw(uint32_t power_limit_mw) {
  ZEUS_RETURN_IF_ERROR(inner_->SetPowerLimitMw(power_limit_mw));
  Persist();
  return Status::Ok();
}

void FileBackedGpu::Persist() {
  StatusOr<uint32_t> limit_mw = inner_->PowerLimitMw();
  if (limit_mw.ok()) WriteFileAtomically(path_, std::to_string(*limit_mw)).IgnoreError();
}

int64_t FileBackedGpu::ReadLimitMw(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return -1;
  return ParseInt64(*text).value_or(-1);
}

}  // namespace zeus::testing
