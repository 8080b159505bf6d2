// Portable builds only (ZEUS_STATIC_RUNTIME): the static libstdc++ of GCC 12,
// built against glibc 2.36, calls arc4random from std::random_device, which
// would make libzeus_c.so need GLIBC_2.36. Defining it here (hidden) binds that
// call locally, so the library loads on glibc 2.35 (e.g. Ubuntu 22.04).
// getrandom is glibc 2.25.

#include <cstdint>

#include <sys/random.h>

extern "C" __attribute__((visibility("hidden"))) uint32_t arc4random(void) noexcept {
  uint32_t value = 0;
  while (getrandom(&value, sizeof(value), 0) != static_cast<ssize_t>(sizeof(value))) {
  }
  return value;
}
