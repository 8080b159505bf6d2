// Test-only Gpu: a FakeGpu whose current power limit is also written to a
// file after every successful change, so a parent process can observe the
// limits a forked child left behind.

#ifndef ZEUS_TESTS_OPTIMIZER_POWER_LIMIT_FILE_BACKED_GPU_H_
#define ZEUS_TESTS_OPTIMIZER_POWER_LIMIT_FILE_BACKED_GPU_H_

#include <string>

#include "zeus/device/fake.h"

namespace zeus::testing {

class FileBackedGpu final : public Gpu {
 public:
  // `inner` must outlive this object. Writes the initial limit to `path`.
  FileBackedGpu(FakeGpu* inner, std::string path);

  int index() const override { return inner_->index(); }
  StatusOr<std::string> Name() override { return inner_->Name(); }
  StatusOr<std::string> Architecture() override { return inner_->Architecture(); }
  StatusOr<std::string> Uuid() override { return inner_->Uuid(); }
  StatusOr<PowerLimitConstraints> PowerLimitConstraintsMw() override {
    return inner_->PowerLimitConstraintsMw();
  }
  StatusOr<uint32_t> DefaultPowerLimitMw() override { return inner_->DefaultPowerLimitMw(); }
  StatusOr<uint32_t> PowerLimitMw() override { return inner_->PowerLimitMw(); }
  StatusOr<uint32_t> EnforcedPowerLimitMw() override { return inner_->EnforcedPowerLimitMw(); }
  Status SetPowerLimitMw(uint32_t power_limit_mw) override;
  StatusOr<bool> PersistenceMode() override { return inner_->PersistenceMode(); }
  Status SetPersistenceMode(bool enabled) override { return inner_->SetPersistenceMode(enabled); }
  StatusOr<uint64_t> TotalEnergyMj() override { return inner_->TotalEnergyMj(); }
  std::chrono::nanoseconds EnergyCounterUpdatePeriod() const override {
    return inner_->EnergyCounterUpdatePeriod();
  }
  StatusOr<uint32_t> PowerMw() override { return inner_->PowerMw(); }

  // The limit (mW) last written to `path`, or -1 when unreadable.
  static int64_t ReadLimitMw(const std::string& path);

 private:
  void Persist();

  FakeGpu* const inner_;
  const std::string path_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_OPTIMIZER_POWER_LIMIT_FILE_BACKED_GPU_H_
