/* A minimal C ABI over the power-limit optimizer, for ctypes and other FFIs.
 *
 * Opaque handles; every fallible call returns a status code (0 = OK, else the
 * zeus::StatusCode value: 1 invalid_argument, 2 not_found, 3 not_supported,
 * 4 permission_denied, 5 unavailable, 6 failed_precondition, 7 io_error,
 * 8 internal, 9 already_exists, 10 aborted) and writes the error message,
 * NUL-terminated and truncated to `message_size` bytes, to `message` (which
 * may be NULL). No C++ exception crosses this boundary.
 *
 * Thread-safety: one handle must be used from one thread at a time. */

#ifndef ZEUS_PYTHON_ZEUS_C_API_H_
#define ZEUS_PYTHON_ZEUS_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZEUS_C_EXPORT __attribute__((visibility("default")))

typedef struct zeus_plo zeus_plo;

/* Called before each measurement boundary (e.g. torch.cuda.synchronize).
 * Returns 0 on success; a failure is logged. */
typedef int (*zeus_sync_fn)(void* user);

/* Data-parallel all-reduce: in place, sum *energy_j and *num_gpus, max
 * *time_s over all ranks. Called collectively. Returns 0 on success. */
typedef int (*zeus_all_reduce_fn)(double* energy_j, double* time_s, int32_t* num_gpus, void* user);

/* The ABI version of this header: 1. */
ZEUS_C_EXPORT int32_t zeus_c_api_version(void);

/* Creates an optimizer over this process's GPUs (NVML, CUDA order).
 * `options_json` (may be NULL or "{}") holds any of: "gpu_indices" (list of
 * CUDA indices; default all), "wait_steps", "warmup_steps", "measure_steps",
 * "min_measure_time_s", "power_limit_step_w", "selector" ("energy", "time",
 * "cost", "slowdown"), "eta", "max_slowdown", "profile_path",
 * "restore_on_signal" (bool), "monitor_mode" ("exact" or "low_overhead").
 * Unknown keys are an error. `sync` and `all_reduce` may be NULL; `user` is
 * passed to both. On success *out owns the optimizer (zeus_plo_destroy). */
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

/* Writes the profile measured so far as JSON (the profile file format) to
 * `buffer` and its length (without NUL) to *length. When `buffer_size` is too
 * small, writes nothing to buffer and returns 1 (invalid_argument) with
 * *length set, so the caller can retry. */
ZEUS_C_EXPORT int32_t zeus_plo_profile_json(const zeus_plo* plo, char* buffer, size_t buffer_size,
                                            size_t* length);

/* Restores the GPUs (like zeus_plo_restore) and frees the optimizer. NULL is a
 * no-op. */
ZEUS_C_EXPORT void zeus_plo_destroy(zeus_plo* plo);

#ifdef __cplusplus
}
#endif

#endif /* ZEUS_PYTHON_ZEUS_C_API_H_ */
