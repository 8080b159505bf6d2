#include "zeus/core/rng.h"

#include <cmath>
#include <cstdio>
#include <numeric>

#include "zeus/util/strings.h"

namespace zeus {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

StatusOr<uint64_t> ParseHex64(const nlohmann::json& j) {
  if (!j.is_string()) return InvalidArgumentError("rng state word: expected a hex string");
  const std::string& s = j.get_ref<const std::string&>();
  if (s.empty() || s.size() > 16) {
    return InvalidArgumentError("rng state word: expected 1-16 hex digits, got '" + s + "'");
  }
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return InvalidArgumentError("rng state word: expected hex digits, got '" + s + "'");
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& word : state_) word = SplitMix64(x);
}

StatusOr<Rng> Rng::FromState(const State& state) {
  if (state[0] == 0 && state[1] == 0 && state[2] == 0 && state[3] == 0) {
    return InvalidArgumentError("rng state: all-zero state is invalid for xoshiro256**");
  }
  Rng rng;
  rng.state_ = state;
  return rng;
}

uint64_t Rng::NextU64() {
  const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = Rotl(state_[3], 45);
  return result;
}

double Rng::Uniform01() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

uint64_t Rng::UniformInt(uint64_t n) {
  ZEUS_CHECK(n > 0);
  // Reject the top partial bucket so every residue is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = NextU64();
  } while (x >= limit);
  return x % n;
}

double Rng::StandardNormal() {
  // 1 - U in (0, 1] keeps log() finite.
  const double u1 = 1.0 - Uniform01();
  const double u2 = Uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Rng::Normal(double mean, double stddev) {
  const double z = StandardNormal();
  if (stddev == 0.0) return mean;
  return mean + stddev * z;
}

std::vector<size_t> Rng::Permutation(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(UniformInt(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

nlohmann::json Rng::ToJson() const {
  nlohmann::json words = nlohmann::json::array();
  for (uint64_t word : state_) words.push_back(Hex64(word));
  return {{"xoshiro256ss", words}};
}

StatusOr<Rng> Rng::FromJson(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("xoshiro256ss")) {
    return InvalidArgumentError("rng: expected an object with field 'xoshiro256ss'");
  }
  const nlohmann::json& words = json.at("xoshiro256ss");
  if (!words.is_array() || words.size() != 4) {
    return InvalidArgumentError("rng: field 'xoshiro256ss' must be an array of 4 hex strings");
  }
  State state;
  for (size_t i = 0; i < 4; ++i) {
    ZEUS_ASSIGN_OR_RETURN(state[i], ParseHex64(words[i]));
  }
  return FromState(state);
}

}  // namespace zeus
