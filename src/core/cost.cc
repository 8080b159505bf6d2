#include "zeus/core/cost.h"

namespace zeus {

double MaxPowerW(double max_power_limit_w, int num_gpus) { return max_power_limit_w * num_gpus; }

double ZeusCost(double energy_j, double time_s, double eta, double max_power_w) {
  return eta * energy_j + (1.0 - eta) * max_power_w * time_s;
}

}  // namespace zeus
