// A knob the just-in-time profiler turns on every GPU it drives: a power
// limit (PowerLimitKnob), a locked SM clock (SmClockKnob). The profiler
// (jit_profiler.h) owns the state machine; a knob owns what differs: how a
// setting is applied and undone, how it is written, which settings can be
// skipped, how the optimum is chosen and how a profile is saved.
//
// Thread-safety: called from the profiler's thread only, except Restore()
// (as Restorable).

#ifndef ZEUS_OPTIMIZER_JIT_KNOB_H_
#define ZEUS_OPTIMIZER_JIT_KNOB_H_

#include <cstdint>
#include <string>

#include "zeus/core/knob_profile.h"
#include "zeus/status.h"

namespace zeus {

class Knob {
 public:
  virtual ~Knob() = default;

  // The context of logs and errors, e.g. "power-limit optimizer".
  virtual const char* LogContext() const = 0;
  // A setting as people read it, e.g. "250 W", "1410 MHz".
  virtual std::string Format(uint32_t setting) const = 0;
  // What the highest setting is, e.g. "the maximum limit".
  virtual const char* HighestSettingName() const = 0;
  // The energy-monitor window of a stretch at `setting`.
  virtual std::string WindowName(uint32_t setting) const = 0;

  // Applies `setting` to every GPU. kPermissionDenied says what to do about
  // it. Once Restore() has run, returns OK and changes nothing.
  virtual Status Set(uint32_t setting) = 0;
  // Gives every GPU the state it had before the knob was created; later Set
  // calls change nothing. Idempotent.
  virtual Status Restore() = 0;
  // True once Restore() has run (by any path, the signal path included).
  virtual bool restored() const = 0;

  // False when a stretch at `setting` cannot differ from one at the highest
  // setting, given the mean draw of one GPU measured there (W): the profiler
  // then records the highest setting's measurement for it instead of
  // measuring. Default: true (always measure).
  virtual bool CanChangeAnything(uint32_t setting, double draw_per_gpu_w) const {
    (void)setting;
    (void)draw_per_gpu_w;
    return true;
  }

  // The setting to pin given a measured (or loaded) profile; it must be one
  // the GPUs accept (else kInvalidArgument).
  virtual StatusOr<uint32_t> Select(const KnobProfile& profile) const = 0;
  // A name for how Select chooses, e.g. "cost(eta=0.5)", for logs.
  virtual std::string SelectorName() const = 0;

  // Reads a saved profile (kNotFound when there is none at `path`).
  virtual StatusOr<KnobProfile> Load(const std::string& path) const = 0;
  // Saves `profile` to `path` atomically.
  virtual Status Save(const std::string& path, const KnobProfile& profile) const = 0;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_JIT_KNOB_H_
