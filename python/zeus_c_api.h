/* The C ABI of Zeus (libzeus_c.so), for ctypes and other FFIs: the energy
 * monitor, the power monitor, the power-limit optimizer, the GPUs and the
 * CPUs. The Python package `zeus` (python/zeus) is built on it. It needs
 * nothing but glibc when built portable (scripts/gpu/python_wheel_build.sh),
 * hence no HTTP client here: the batch-size client is pure Python.
 *
 * Opaque handles; every fallible call returns a status code (0 = OK, else the
 * zeus::StatusCode value: 1 invalid_argument, 2 not_found, 3 not_supported,
 * 4 permission_denied, 5 unavailable, 6 failed_precondition, 7 io_error,
 * 8 internal, 9 already_exists, 10 aborted) and writes the error message,
 * NUL-terminated and truncated to `message_size` bytes, to `message` (which
 * may be NULL). No C++ exception crosses this boundary. Options are JSON
 * objects (NULL means "{}"); unknown keys are an error. Times are seconds
 * of one monotonic clock (zeus_now_s), energies J, powers W unless a name
 * says mW/mJ.
 *
 * Calls that return variable-length text (JSON) take `buffer`,
 * `buffer_size` and `length`: *length gets the text's length (without NUL);
 * when the buffer is too small, nothing is written to it and the call
 * returns 1 (invalid_argument), so the caller can retry with *length + 1.
 *
 * Thread-safety: a monitor handle and a zeus_gpus handle may be used from
 * any thread (boundaries, and zeus_gpus setters, are serialised); every other
 * handle from one thread at a time. Handles may
 * be destroyed in any order: an optimizer keeps its monitor's GPUs alive. */

#ifndef ZEUS_PYTHON_ZEUS_C_API_H_
#define ZEUS_PYTHON_ZEUS_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZEUS_C_EXPORT __attribute__((visibility("default")))

typedef struct zeus_monitor zeus_monitor;
typedef struct zeus_plo zeus_plo;
typedef struct zeus_power_monitor zeus_power_monitor;
typedef struct zeus_gpus zeus_gpus;
typedef struct zeus_cpus zeus_cpus;

/* Called before each measurement boundary (e.g. torch.cuda.synchronize).
 * Returns 0 on success; a failure is logged. */
typedef int (*zeus_sync_fn)(void* user);

/* Data-parallel all-reduce: in place, sum *energy_j and *num_gpus, max
 * *time_s over all ranks. Called collectively. Returns 0 on success. */
typedef int (*zeus_all_reduce_fn)(double* energy_j, double* time_s, int32_t* num_gpus, void* user);

/* A custom optimum selector (zeus_plo_create_with_selector): given the
 * profile as JSON (zeus_plo_profile_json's format, all ranks' totals under
 * data parallelism), writes the limit to pin, in mW, to *power_limit_mw and
 * returns 0; non-zero on failure. Called on the thread driving the optimizer:
 * from zeus_plo_on_step_begin when profiling ends (collectively: every rank
 * at the same step), and from creation when a saved profile is loaded. */
typedef int (*zeus_select_fn)(const char* profile_json, uint32_t* power_limit_mw, void* user);

/* The ABI version of this header: 2. */
ZEUS_C_EXPORT int32_t zeus_c_api_version(void);

/* Seconds on the monotonic clock every handle uses. */
ZEUS_C_EXPORT double zeus_now_s(void);

/* ---- Logs ---------------------------------------------------------------- */

/* Receives one message of the core: `level` 0 trace, 1 debug, 2 info,
 * 3 warning, 4 error, 5 critical; `message` UTF-8 without a newline. Called
 * on whichever thread logged, possibly several at once. */
typedef void (*zeus_log_fn)(int32_t level, const char* message, void* user);

/* Sends the core's messages at `level` (as above; 6 = none) and above to
 * `fn`, or, with `fn` NULL, to stderr. Until this is called the core logs
 * to stderr at level 2 (info), never to stdout. */
ZEUS_C_EXPORT void zeus_set_log_handler(zeus_log_fn fn, void* user, int32_t level);

/* ---- GPUs --------------------------------------------------------------- */

/* Opens this process's GPUs (NVML, CUDA order; $ZEUS_NVML_LIBRARY overrides
 * the library). kUnavailable when NVML cannot be loaded. */
ZEUS_C_EXPORT int32_t zeus_gpus_open(zeus_gpus** out, char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_count(const zeus_gpus* gpus);
/* A JSON list, one object per GPU: "index", "backend" (the core backend the
 * GPUs came from: "nvml" or "amdsmi"), "name", "uuid", "architecture",
 * "min_power_limit_mw", "max_power_limit_mw", "default_power_limit_mw",
 * "power_limit_mw", "has_energy_counter"; a value that cannot be read is
 * null. */
ZEUS_C_EXPORT int32_t zeus_gpus_json(zeus_gpus* gpus, char* buffer, size_t buffer_size,
                                     size_t* length, char* message, size_t message_size);
/* Instant power (mW), energy counter (mJ) and power limit (mW) of GPU
 * `position`. */
ZEUS_C_EXPORT int32_t zeus_gpus_power_mw(zeus_gpus* gpus, int32_t position, uint32_t* power_mw,
                                         char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_energy_mj(zeus_gpus* gpus, int32_t position, uint64_t* energy_mj,
                                          char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_power_limit_mw(zeus_gpus* gpus, int32_t position,
                                               uint32_t* power_limit_mw, char* message,
                                               size_t message_size);
/* Like zeus_gpus_open; `options_json` key: "restore_on_exit" (bool, default
 * true: settings changed through the handle are put back by
 * zeus_gpus_restore and zeus_gpus_destroy, power limits also on a fatal
 * signal, like the power-limit optimizer's). */
ZEUS_C_EXPORT int32_t zeus_gpus_open_with(const char* options_json, zeus_gpus** out, char* message,
                                          size_t message_size);
/* The board's default power limit of GPU `position`, in mW. */
ZEUS_C_EXPORT int32_t zeus_gpus_default_power_limit_mw(zeus_gpus* gpus, int32_t position,
                                                       uint32_t* power_limit_mw, char* message,
                                                       size_t message_size);
/* Setters of GPU `position`, through the GPU's backend: ZEUS_DRY_RUN only
 * logs, ZEUSD_SOCK_PATH relays to the Zeus daemon. 4 (permission_denied)
 * without the privilege, nothing changed. A power limit outside the GPU's
 * constraints is 1 (invalid_argument) before anything is touched. With
 * restore_on_exit, the first power-limit change records every GPU's limit,
 * the first persistence change the GPU's mode, and a clock lock is undone. */
ZEUS_C_EXPORT int32_t zeus_gpus_set_power_limit_mw(zeus_gpus* gpus, int32_t position,
                                                   uint32_t power_limit_mw, char* message,
                                                   size_t message_size);
/* Sets the default power limit. */
ZEUS_C_EXPORT int32_t zeus_gpus_reset_power_limit(zeus_gpus* gpus, int32_t position, char* message,
                                                  size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_persistence_mode(zeus_gpus* gpus, int32_t position,
                                                 int32_t* enabled, char* message,
                                                 size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_set_persistence_mode(zeus_gpus* gpus, int32_t position,
                                                     int32_t enabled, char* message,
                                                     size_t message_size);
/* Locks the graphics (`memory` 0) or memory (`memory` 1) clocks to
 * [min_mhz, max_mhz]; reset unlocks them. */
ZEUS_C_EXPORT int32_t zeus_gpus_set_locked_clocks(zeus_gpus* gpus, int32_t position, int32_t memory,
                                                  uint32_t min_mhz, uint32_t max_mhz, char* message,
                                                  size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_reset_locked_clocks(zeus_gpus* gpus, int32_t position,
                                                    int32_t memory, char* message,
                                                    size_t message_size);
/* Lifts a lock of the graphics (`memory` 0) or memory (`memory` 1) clocks
 * however the backend can (zeus::UnlockClocks: the reset above, or where the
 * backend cannot reset one domain alone (AMD SMI), a lock to the domain's
 * whole range of supported clocks). */
ZEUS_C_EXPORT int32_t zeus_gpus_unlock_clocks(zeus_gpus* gpus, int32_t position, int32_t memory,
                                              char* message, size_t message_size);
/* GPU temperature (degrees Celsius) and power of a domain (mW): `domain` 0
 * device instant, 1 device average (~1 s), 2 memory average. 3
 * (not_supported) where the GPU lacks it, or the build's device layer has no
 * such read (zeus_gpus_has_domain_reads() is 0). */
ZEUS_C_EXPORT int32_t zeus_gpus_has_domain_reads(void);
ZEUS_C_EXPORT int32_t zeus_gpus_temperature_c(zeus_gpus* gpus, int32_t position, int32_t* celsius,
                                              char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpus_domain_power_mw(zeus_gpus* gpus, int32_t position, int32_t domain,
                                                uint32_t* power_mw, char* message,
                                                size_t message_size);
/* The graphics clocks GPU `position` can be locked to, in MHz, distinct,
 * highest first (the core's Gpu::SupportedGraphicsClocksMhz: NVML's at the
 * current memory clock, AMD SMI's graphics DPM levels). *count gets their
 * number; the first min(*count, capacity) are written to clocks_mhz (which
 * may be NULL when capacity is 0), so a caller whose capacity was too small
 * retries with *count. 3 (not_supported) where the GPU cannot list them. */
ZEUS_C_EXPORT int32_t zeus_gpus_supported_graphics_clocks_mhz(zeus_gpus* gpus, int32_t position,
                                                              uint32_t* clocks_mhz, size_t capacity,
                                                              size_t* count, char* message,
                                                              size_t message_size);
/* The same at the memory clock `memory_clock_mhz` (0: the current one): 2
 * (not_found) naming it when it is not one of the GPU's supported memory
 * clocks. */
ZEUS_C_EXPORT int32_t zeus_gpus_supported_graphics_clocks_at_mhz(
    zeus_gpus* gpus, int32_t position, uint32_t memory_clock_mhz, uint32_t* clocks_mhz,
    size_t capacity, size_t* count, char* message, size_t message_size);
/* The memory clocks GPU `position` supports, in MHz, distinct, highest first
 * (Gpu::SupportedMemoryClocksMhz: NVML's list, AMD SMI's memory DPM levels),
 * with the buffer convention above. */
ZEUS_C_EXPORT int32_t zeus_gpus_supported_memory_clocks_mhz(zeus_gpus* gpus, int32_t position,
                                                            uint32_t* clocks_mhz, size_t capacity,
                                                            size_t* count, char* message,
                                                            size_t message_size);
/* Puts back what the handle changed (power limits, persistence modes, clock
 * locks: unlocked, or where the backend cannot unlock one domain alone (AMD
 * SMI), locked to the domain's whole supported range); tries every GPU and
 * reports the first error. Later changes are
 * recorded afresh. 6 (failed_precondition) in a process forked from the
 * one that opened the handle; destroying the handle there restores nothing. */
ZEUS_C_EXPORT int32_t zeus_gpus_restore(zeus_gpus* gpus, char* message, size_t message_size);
/* Restores (see zeus_gpus_restore, errors logged) and frees. NULL: no-op. */
ZEUS_C_EXPORT void zeus_gpus_destroy(zeus_gpus* gpus);
/* The GPU backends compiled in (DescribeGpuBackends, process environment), as
 * a JSON list in the order zeus_gpus_open tries them, one object each:
 * "name" ("nvml", "amdsmi"), "display_name", "loaded" (the library loaded and
 * initialised), "in_use" (true for the one backend zeus_gpus_open uses: the
 * first that finds GPUs), "selection" (why it is or is not used; "" when not
 * loaded) and "status" ("" when loaded with its versions, else why not).
 * Changes no device state. */
ZEUS_C_EXPORT int32_t zeus_gpu_backends_json(char* buffer, size_t buffer_size, size_t* length,
                                             char* message, size_t message_size);

/* ---- CPUs (RAPL) -------------------------------------------------------- */

/* Opens the CPU sockets: the RAPL package zones (intel-rapl:N) found in
 * "powercap_root" (default /sys/class/powercap), or the Zeus daemon's CPUs
 * with ZEUSD_SOCK_PATH set. No zone: zero CPUs. 4 (permission_denied) when
 * the counters are root-only. */
ZEUS_C_EXPORT int32_t zeus_cpus_open(const char* options_json, zeus_cpus** out, char* message,
                                     size_t message_size);
ZEUS_C_EXPORT int32_t zeus_cpus_count(const zeus_cpus* cpus);
/* The socket of CPU `position` and whether it has a DRAM zone; 1 when out of
 * range. */
ZEUS_C_EXPORT int32_t zeus_cpus_info(const zeus_cpus* cpus, int32_t position, int32_t* socket,
                                     int32_t* has_dram);
/* Package and DRAM energy counters (uJ, arbitrary origin, wraparound
 * corrected); `dram_uj` is left alone when the socket has no DRAM zone. */
ZEUS_C_EXPORT int32_t zeus_cpus_energy_uj(zeus_cpus* cpus, int32_t position, uint64_t* package_uj,
                                          uint64_t* dram_uj, char* message, size_t message_size);
ZEUS_C_EXPORT void zeus_cpus_destroy(zeus_cpus* cpus);

/* ---- Energy monitor ----------------------------------------------------- */

/* Creates an energy monitor. `options_json` keys: "gpu_indices" (CUDA
 * indices; null or absent: every GPU, none when NVML is missing),
 * "cpu_indices" (RAPL sockets; null or absent: every readable socket, none
 * when RAPL cannot be read), "mode" ("exact" or "low_overhead"),
 * "approx_instant_energy" (bool), "log_file" (CSV path),
 * "power_sample_period_s", "counter_poll_period_s", "powercap_root" (where
 * RAPL's zones are; default /sys/class/powercap, whose absence falls back to
 * /zeus_sys/class/powercap). An unreadable RAPL counter with "cpu_indices"
 * given is status 4 (permission_denied). With no GPU and no CPU, windows measure
 * time only. `sync` may be NULL. */
ZEUS_C_EXPORT int32_t zeus_monitor_create(const char* options_json, zeus_sync_fn sync, void* user,
                                          zeus_monitor** out, char* message, size_t message_size);
/* A replaying window source (zeus_monitor_create_replay): called when window
 * `name` ends; writes the window's time (s) to *time_s and each GPU's energy
 * (J, by position; `num_gpus` of them) to `gpu_energy_j`, and returns 0;
 * non-zero when it has no measurement for the window (the window's End then
 * fails with 10 aborted). Called on the thread ending the window. */
typedef int (*zeus_replay_end_fn)(const char* name, double* time_s, double* gpu_energy_j,
                                  size_t num_gpus, void* user);
/* A monitor whose windows measure nothing: each End asks `end` for the
 * window's time and energies (e.g. rows of a recorded log). Its GPUs
 * (options key "gpu_indices", as for zeus_monitor_create) are opened, so a
 * power-limit optimizer built on it sets their limits; no CPU. */
ZEUS_C_EXPORT int32_t zeus_monitor_create_replay(const char* options_json, zeus_replay_end_fn end,
                                                 void* user, zeus_monitor** out, char* message,
                                                 size_t message_size);
ZEUS_C_EXPORT int32_t zeus_monitor_num_gpus(const zeus_monitor* monitor);
ZEUS_C_EXPORT int32_t zeus_monitor_num_cpus(const zeus_monitor* monitor);
/* The CUDA index of GPU `position` / the socket of CPU `position`; -1 when
 * out of range. */
ZEUS_C_EXPORT int32_t zeus_monitor_gpu_index(const zeus_monitor* monitor, int32_t position);
ZEUS_C_EXPORT int32_t zeus_monitor_cpu_index(const zeus_monitor* monitor, int32_t position);
/* Opens window `name` (9 already_exists when open). */
ZEUS_C_EXPORT int32_t zeus_monitor_begin(zeus_monitor* monitor, const char* name, char* message,
                                         size_t message_size);
/* Closes window `name` (2 not_found when not open) and writes to `values`
 * (at least 2 + num_gpus + 2 * num_cpus doubles): elapsed s, start s, then
 * GPU energies, CPU package energies, DRAM energies (J, by position). */
ZEUS_C_EXPORT int32_t zeus_monitor_end(zeus_monitor* monitor, const char* name, double* values,
                                       size_t num_values, char* message, size_t message_size);
/* zeus_monitor_begin / zeus_monitor_end without the sync callback: for a
 * caller that has synchronised itself, or wants no synchronisation. */
ZEUS_C_EXPORT int32_t zeus_monitor_begin_nosync(zeus_monitor* monitor, const char* name,
                                                char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_monitor_end_nosync(zeus_monitor* monitor, const char* name,
                                              double* values, size_t num_values, char* message,
                                              size_t message_size);
ZEUS_C_EXPORT int32_t zeus_monitor_cancel(zeus_monitor* monitor, const char* name, char* message,
                                          size_t message_size);
/* What open window `name` began with, read without touching a device (2
 * not_found when not open; 3 not_supported for a replaying monitor): writes
 * to `values` (at least 1 + num_gpus + 2 * num_cpus doubles) the start s
 * (as zeus_monitor_end's), then the GPU energies, CPU package energies and
 * DRAM energies at the start (J, by position; absolute counter values, see
 * zeus::WindowBegin). */
ZEUS_C_EXPORT int32_t zeus_monitor_window_begin(const zeus_monitor* monitor, const char* name,
                                                double* values, size_t num_values, char* message,
                                                size_t message_size);
ZEUS_C_EXPORT int32_t zeus_monitor_is_open(const zeus_monitor* monitor, const char* name);
ZEUS_C_EXPORT void zeus_monitor_destroy(zeus_monitor* monitor);

/* ---- Power-limit optimizer ---------------------------------------------- */

/* Creates an optimizer over the GPUs of `monitor`, measuring through it.
 * `options_json` keys: "wait_steps", "warmup_steps", "measure_steps",
 * "min_measure_time_s", "power_limit_step_w", "selector" ("energy", "time",
 * "cost", "slowdown"), "eta", "max_slowdown", "profile_path",
 * "restore_on_signal" (bool), "skip_nonbinding_limits" (bool, default true),
 * "nonbinding_margin" (default 0.2). `all_reduce` may be NULL.
 * kInvalidArgument when the monitor has no GPU. */
ZEUS_C_EXPORT int32_t zeus_plo_create_on_monitor(zeus_monitor* monitor, const char* options_json,
                                                 zeus_all_reduce_fn all_reduce, void* user,
                                                 zeus_plo** out, char* message,
                                                 size_t message_size);
/* zeus_plo_create_on_monitor whose optimum is chosen by `select` (non-NULL;
 * the options' "selector", "eta" and "max_slowdown" are then refused). A
 * failing `select`, or a limit outside the GPUs' range, keeps the maximum
 * limit: the call that ended profiling returns 10 (aborted) or 1
 * (invalid_argument), and the profile is kept (and saved). */
ZEUS_C_EXPORT int32_t zeus_plo_create_with_selector(zeus_monitor* monitor, const char* options_json,
                                                    zeus_all_reduce_fn all_reduce,
                                                    zeus_select_fn select, void* user,
                                                    zeus_plo** out, char* message,
                                                    size_t message_size);
/* Like zeus_plo_create_on_monitor over a monitor of its own; also accepts
 * "gpu_indices" and "monitor_mode" ("exact" or "low_overhead"). */
ZEUS_C_EXPORT int32_t zeus_plo_create(const char* options_json, zeus_sync_fn sync,
                                      zeus_all_reduce_fn all_reduce, void* user, zeus_plo** out,
                                      char* message, size_t message_size);

ZEUS_C_EXPORT int32_t zeus_plo_on_step_begin(zeus_plo* plo, char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_plo_on_epoch_end(zeus_plo* plo, char* message, size_t message_size);
/* Gives every GPU its original limit back; the optimizer then stops changing
 * limits. */
ZEUS_C_EXPORT int32_t zeus_plo_restore(zeus_plo* plo, char* message, size_t message_size);

/* 0 waiting, 1 warm-up, 2 measuring, 3 done. */
ZEUS_C_EXPORT int32_t zeus_plo_phase(const zeus_plo* plo);
/* The pinned limit in mW once done, else 0. */
ZEUS_C_EXPORT uint32_t zeus_plo_optimum_mw(const zeus_plo* plo);
/* The limit last set on every GPU by the optimizer, in mW. */
ZEUS_C_EXPORT uint32_t zeus_plo_current_limit_mw(const zeus_plo* plo);

/* The profile measured so far as JSON (the profile file format). See the
 * buffer convention above. */
ZEUS_C_EXPORT int32_t zeus_plo_profile_json(const zeus_plo* plo, char* buffer, size_t buffer_size,
                                            size_t* length);

/* The optimizer's state as JSON (see the buffer convention above):
 * {"phase": "waiting"|"warmup"|"profiling"|"done", "steps_left": step begins
 * until the phase ends or is looked at again (null once done),
 * "phase_limit_mw": the limit waited for, warmed up at or profiled (the
 * optimum once done), "current_power_limit_mw", "optimum_mw" (null until
 * done), "power_limits_mw": the limits of the sweep, from the maximum down,
 * "skipped_power_limits_mw": those recorded as equal to the maximum without
 * profiling (they cannot bind at the draw measured there)}. */
ZEUS_C_EXPORT int32_t zeus_plo_state_json(const zeus_plo* plo, char* buffer, size_t buffer_size,
                                          size_t* length);

/* Restores the GPUs (like zeus_plo_restore) and frees the optimizer. NULL is a
 * no-op. */
ZEUS_C_EXPORT void zeus_plo_destroy(zeus_plo* plo);

/* ---- Frequency optimizer ------------------------------------------------ */

typedef struct zeus_fo zeus_fo;

/* Creates a frequency optimizer (locked SM clocks) over the GPUs of
 * `monitor`, measuring through it. `options_json` keys: "wait_steps",
 * "warmup_steps", "measure_steps", "min_measure_time_s", "clock_step_mhz",
 * "min_clock_mhz" (0: half the highest), "selector" ("energy", "time",
 * "cost", "slowdown"), "eta", "max_slowdown", "profile_path",
 * "restore_on_signal" (bool). `all_reduce` may be NULL. 3 (not_supported)
 * when the GPUs cannot list their supported clocks. */
ZEUS_C_EXPORT int32_t zeus_fo_create_on_monitor(zeus_monitor* monitor, const char* options_json,
                                                zeus_all_reduce_fn all_reduce, void* user,
                                                zeus_fo** out, char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_fo_on_step_begin(zeus_fo* fo, char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_fo_on_epoch_end(zeus_fo* fo, char* message, size_t message_size);
/* Unlocks every GPU's clocks; the optimizer then stops locking them. */
ZEUS_C_EXPORT int32_t zeus_fo_restore(zeus_fo* fo, char* message, size_t message_size);
/* The profile so far as JSON (the frequency profile file format). */
ZEUS_C_EXPORT int32_t zeus_fo_profile_json(const zeus_fo* fo, char* buffer, size_t buffer_size,
                                           size_t* length);
/* {"phase", "steps_left", "phase_clock_mhz", "current_clock_mhz",
 * "optimum_mhz" (null until done), "clocks_mhz": the grid, highest first}. */
ZEUS_C_EXPORT int32_t zeus_fo_state_json(const zeus_fo* fo, char* buffer, size_t buffer_size,
                                         size_t* length);
/* Unlocks the clocks (like zeus_fo_restore) and frees the optimizer. */
ZEUS_C_EXPORT void zeus_fo_destroy(zeus_fo* fo);

/* ---- Power monitor ------------------------------------------------------ */

/* Samples the power of GPUs in one or more power domains ("device_instant",
 * "device_average", "memory_average") on one background thread, and the
 * GPUs' energy counters beside them (one reader thread per GPU).
 * `options_json` keys: "gpu_indices" (null or absent: every GPU),
 * "period_s" (default 0.1), "max_points_per_gpu", "domains" (list of names;
 * null or absent: every domain the first GPU supports), "counter_period_s"
 * (default 0.01), "sample_energy_counters" (default true). */
ZEUS_C_EXPORT int32_t zeus_power_monitor_create(const char* options_json, zeus_power_monitor** out,
                                                char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_power_monitor_num_gpus(const zeus_power_monitor* pm);
ZEUS_C_EXPORT int32_t zeus_power_monitor_gpu_index(const zeus_power_monitor* pm, int32_t position);
/* The sampled domains: their number, and the name of the i-th (a static
 * string; NULL out of range). */
ZEUS_C_EXPORT int32_t zeus_power_monitor_num_domains(const zeus_power_monitor* pm);
ZEUS_C_EXPORT const char* zeus_power_monitor_domain_name(const zeus_power_monitor* pm, int32_t i);
/* 1 when GPU `position`'s energy counter is sampled, else 0. */
ZEUS_C_EXPORT int32_t zeus_power_monitor_has_counter(const zeus_power_monitor* pm,
                                                     int32_t position);
/* Energy of GPU `position` between two zeus_now_s times, in J: with `domain`
 * NULL, from the energy counter samples (status 6, failed_precondition,
 * when the GPU has none); else the integral of that domain's timeline. */
ZEUS_C_EXPORT int32_t zeus_power_monitor_domain_energy(const zeus_power_monitor* pm,
                                                       int32_t position, const char* domain,
                                                       double start_s, double end_s,
                                                       double* energy_j, char* message,
                                                       size_t message_size);
/* The stored points of `domain` (NULL: the first sampled) of GPU `position`
 * in [start_s, end_s]: at most `capacity` pairs written to times_s and
 * powers_w; *count gets the number of points (when larger than capacity,
 * nothing is written and 1 is returned). */
ZEUS_C_EXPORT int32_t zeus_power_monitor_domain_timeline(const zeus_power_monitor* pm,
                                                         int32_t position, const char* domain,
                                                         double start_s, double end_s,
                                                         double* times_s, double* powers_w,
                                                         size_t capacity, size_t* count,
                                                         char* message, size_t message_size);
ZEUS_C_EXPORT void zeus_power_monitor_destroy(zeus_power_monitor* pm);

/* ---- GPU reader (temperature, domain power) ----------------------------- */

typedef struct zeus_gpu_reader zeus_gpu_reader;

/* Opens GPUs for direct reads. `options_json` key: "gpu_indices" (null or
 * absent: every GPU). */
ZEUS_C_EXPORT int32_t zeus_gpu_reader_create(const char* options_json, zeus_gpu_reader** out,
                                             char* message, size_t message_size);
ZEUS_C_EXPORT int32_t zeus_gpu_reader_num_gpus(const zeus_gpu_reader* reader);
ZEUS_C_EXPORT int32_t zeus_gpu_reader_gpu_index(const zeus_gpu_reader* reader, int32_t position);
/* GPU temperature in C. */
ZEUS_C_EXPORT int32_t zeus_gpu_reader_temperature_c(const zeus_gpu_reader* reader, int32_t position,
                                                    int32_t* temperature_c, char* message,
                                                    size_t message_size);
/* Power of `domain` in mW (3, not_supported, for a domain the GPU lacks). */
ZEUS_C_EXPORT int32_t zeus_gpu_reader_power_mw(const zeus_gpu_reader* reader, int32_t position,
                                               const char* domain, uint32_t* power_mw,
                                               char* message, size_t message_size);
/* The product name of GPU `position` (buffer convention of this header). */
ZEUS_C_EXPORT int32_t zeus_gpu_reader_name(const zeus_gpu_reader* reader, int32_t position,
                                           char* buffer, size_t buffer_size, size_t* length,
                                           char* message, size_t message_size);
ZEUS_C_EXPORT void zeus_gpu_reader_destroy(zeus_gpu_reader* reader);

#ifdef __cplusplus
}
#endif

#endif /* ZEUS_PYTHON_ZEUS_C_API_H_ */
