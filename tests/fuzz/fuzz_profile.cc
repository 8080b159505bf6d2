// Fuzzes the power-limit profile readers: the same input is read as the JSON
// profile format and as the CSV log format. Invariants beyond "no crash": a
// profile either reader accepts passes ValidateProfile, and its JSON text
// reads back to an equal profile.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "zeus/core/power_limit_profile.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_profile: invariant violated: %s\n", what);
    std::abort();
  }
}

void CheckAccepted(const zeus::PowerLimitProfile& profile) {
  Check(zeus::ValidateProfile(profile).ok(), "an accepted profile fails ValidateProfile");
  zeus::StatusOr<zeus::PowerLimitProfile> again =
      zeus::ProfileFromJson(zeus::ProfileToJson(profile), "round trip");
  Check(again.ok(), "ProfileToJson's text is refused by ProfileFromJson");
  Check(again->num_gpus == profile.num_gpus &&
            again->measurements.size() == profile.measurements.size(),
        "the JSON round trip changed the profile");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  zeus::StatusOr<zeus::PowerLimitProfile> json = zeus::ProfileFromJson(text, "fuzz.json");
  if (json.ok()) CheckAccepted(*json);
  zeus::StatusOr<zeus::PowerLimitProfile> csv = zeus::ProfileFromCsv(text, "fuzz.csv");
  if (csv.ok()) CheckAccepted(*csv);
  return 0;
}
