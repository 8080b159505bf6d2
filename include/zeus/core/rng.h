// A small, portable random generator with fully explicit state.
//
// xoshiro256** seeded through splitmix64. Every draw is a pure function of the
// four state words: there is no hidden cache (Normal() uses both Box-Muller
// uniforms for one sample and discards the second), so a generator rebuilt
// from State() continues exactly the same sequence on any platform.
//
// Thread-safety: not thread-safe; one generator per owner.

#ifndef ZEUS_CORE_RNG_H_
#define ZEUS_CORE_RNG_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/status.h"

namespace zeus {

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  // Seeds the four state words with splitmix64(seed). Any seed is valid.
  explicit Rng(uint64_t seed = 0);

  // Rebuilds a generator from State(). kInvalidArgument for the all-zero
  // state, which xoshiro cannot leave.
  static StatusOr<Rng> FromState(const State& state);
  const State& state() const { return state_; }

  // Uniform over all 64-bit values.
  uint64_t NextU64();
  // Uniform in [0, 1), 53 bits of precision.
  double Uniform01();
  // Uniform in [0, n). REQUIRES: n > 0. Unbiased (rejection sampling).
  uint64_t UniformInt(uint64_t n);
  // A standard normal sample (Box-Muller, one sample per two uniforms).
  double StandardNormal();
  // mean + stddev * StandardNormal(). stddev 0 returns mean exactly.
  double Normal(double mean, double stddev);
  // A uniformly random permutation of 0..n-1 (Fisher-Yates).
  std::vector<size_t> Permutation(size_t n);

  // JSON: {"xoshiro256ss": ["<16 hex digits>" x 4]}. Hex strings keep the
  // 64-bit words exact through any JSON store.
  nlohmann::json ToJson() const;
  static StatusOr<Rng> FromJson(const nlohmann::json& json);

 private:
  State state_;
};

}  // namespace zeus

#endif  // ZEUS_CORE_RNG_H_
