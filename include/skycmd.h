/*
 * skycmd.h - the public, stable C ABI of libskycmd.
 *
 * libskycmd runs "System One" decision models (ModernBERT encoders with a Laya decision
 * head) stored in GGUF files: it converts Laya checkpoints, inspects and quantizes GGUF
 * files, tokenizes, and answers /v1/systemone requests in one forward pass.
 *
 * Contract (read this before using any function):
 *
 *  - Every function that can fail returns a skycmd_status, except constructors and
 *    accessors documented to return NULL, -1 or NaN instead (skycmd_error_new,
 *    skycmd_options_new, skycmd_tokenizer_token, the skycmd_response_* getters, ...).
 *    SKYCMD_OK is 0; the other values are pinned and never renumbered. skycmd_status_name() and skycmd_strerror() return
 *    static strings.
 *  - Details of a failure live with the object that failed, never in a global:
 *      * calls on a session or a request leave a message in that handle, read with
 *        skycmd_session_errmsg() / skycmd_request_errmsg(); it stays valid until the next
 *        call on it (skycmd_request_parse() sets *out even on failure, so its message can
 *        be read);
 *      * calls that have no handle to hold a message (skycmd_model_open*,
 *        skycmd_tokenizer_open_json, skycmd_convert, skycmd_inspect, skycmd_quantize,
 *        skycmd_random_model, skycmd_calibrate, skycmd_check_version,
 *        skycmd_default_model_path) take an optional skycmd_error object, made by
 *        skycmd_error_new(), that receives the status and message (and, when a system call
 *        failed, its errno: skycmd_error_errno). Pass NULL when you only want the status;
 *      * the other calls (on a model, a tokenizer, a response or options, and
 *        skycmd_session_new, skycmd_packed_*) return a status only: there is no
 *        skycmd_tokenizer_errmsg or skycmd_model_errmsg, since tokenizers and models are
 *        immutable and keep no message.
 *  - Ownership: a pointer returned through an `out` parameter of a *_new / *_open call is
 *    yours and is released with the matching *_free. Strings the library allocates for you
 *    (char **) are released with skycmd_string_free(). `const char *` results are borrowed
 *    from their handle and live as long as it does (or until the next call on it when said).
 *    Every *_free accepts NULL.
 *  - Threads: a skycmd_model is immutable once open and may be shared by any number of
 *    threads. A skycmd_session, skycmd_request, skycmd_response or skycmd_error belongs to
 *    one thread at a time (use one session per thread). Tokenizers are immutable.
 *    A model must outlive its sessions: skycmd_model_free() on a model that still has
 *    sessions returns SKYCMD_E_BUSY and frees nothing.
 *  - Misuse (NULL handle, freed or wrong handle, out-of-range index) returns
 *    SKYCMD_E_MISUSE or SKYCMD_E_INVALID_ARGUMENT instead of crashing where it can be
 *    detected.
 *  - Options are set through setters keyed by the skycmd_option enum; there are no structs
 *    in this ABI. Callbacks always take a `void *user_data` given with the callback.
 *  - Strings are UTF-8. Sizes are size_t; token ids are int32_t.
 *
 * Versioning: SKYCMD_VERSION_* describe this header; skycmd_version_number() the library
 * that is running. SKYCMD_ABI_VERSION is the soname major: it changes only when a stable
 * symbol is removed or changed. skycmd_check_version(SKYCMD_VERSION_NUMBER) lets a program
 * (or a binding) refuse a library older than the header it was built against.
 */
#ifndef SKYCMD_H
#define SKYCMD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- export macro ---- */
#if defined(SKYCMD_BUILD) && defined(SKYCMD_USE_DLL)
#  error "SKYCMD_BUILD and SKYCMD_USE_DLL are mutually exclusive"
#endif
#ifndef SKYCMD_API
#  if defined(_WIN32)
#    if defined(SKYCMD_BUILD) && defined(SKYCMD_SHARED)
#      define SKYCMD_API __declspec(dllexport)
#    elif defined(SKYCMD_USE_DLL)
#      define SKYCMD_API __declspec(dllimport)
#    else
#      define SKYCMD_API
#    endif
#  elif defined(__GNUC__) && __GNUC__ >= 4
#    define SKYCMD_API __attribute__((visibility("default")))
#  else
#    define SKYCMD_API
#  endif
#endif

/* ---------------------------------------------------------------- versions -------- */
#define SKYCMD_VERSION_MAJOR 0
#define SKYCMD_VERSION_MINOR 1
#define SKYCMD_VERSION_PATCH 0
#define SKYCMD_VERSION_NUMBER \
    (SKYCMD_VERSION_MAJOR * 10000 + SKYCMD_VERSION_MINOR * 100 + SKYCMD_VERSION_PATCH)
#define SKYCMD_VERSION_STRING "0.1.0"
/* The ABI (soname) major. */
#define SKYCMD_ABI_VERSION 1

SKYCMD_API unsigned    skycmd_version_number(void);
SKYCMD_API const char *skycmd_version_string(void);
SKYCMD_API unsigned    skycmd_abi_version(void);
/* The commit and configuration the library was built from, e.g. "git 1a2b3c4 Release". */
SKYCMD_API const char *skycmd_build_id(void);
/* The CPU features the kernels dispatch to at run time, e.g. "avx2 fma f16c". */
SKYCMD_API const char *skycmd_cpu_features(void);
/* The kernels the library runs on this CPU, as "f32=LEVEL int8=KERNEL": LEVEL is scalar,
 * avx2, avx512 (x86-64) or neon (arm64); KERNEL is scalar, avx2, vnni, amx (x86-64),
 * dotprod or i8mm (arm64). SKYCMD_KERNELS=scalar in the environment shows "f32=scalar
 * int8=scalar". A static string. Added in 0.1.0. */
SKYCMD_API const char *skycmd_kernels(void);
/* SKYCMD_OK when the running library is at least `header_version_number` with the same
 * major version; SKYCMD_E_VERSION otherwise. Bindings call it when they load. */
struct skycmd_error;
SKYCMD_API int skycmd_check_version(unsigned header_version_number, struct skycmd_error *err);

/* ---------------------------------------------------------------- status ---------- */
/* Pinned values. New values are only appended; retired ones become SKYCMD_E_OBSOLETE_nn. */
typedef enum skycmd_status {
    SKYCMD_OK                 = 0,
    SKYCMD_E_INVALID_ARGUMENT = 1,  /* a parameter is out of its documented range     */
    SKYCMD_E_MISUSE           = 2,  /* NULL/freed/wrong handle, call out of order     */
    SKYCMD_E_NOMEM            = 3,  /* an allocation failed                           */
    SKYCMD_E_IO               = 4,  /* a file could not be opened, read or written    */
    SKYCMD_E_FORMAT           = 5,  /* a file's bytes are damaged or inconsistent      */
    SKYCMD_E_UNSUPPORTED      = 6,  /* valid, but not something this build can do     */
    SKYCMD_E_BUSY             = 7,  /* the object is still in use (e.g. open sessions)*/
    SKYCMD_E_JSON             = 8,  /* a request body is not well-formed JSON (400)   */
    SKYCMD_E_REQUEST          = 9,  /* a well-formed request is invalid (422)         */
    SKYCMD_E_TOO_LARGE        = 10, /* a size, count or depth limit was exceeded (413)*/
    SKYCMD_E_VERSION          = 11, /* library older than the header a caller needs   */
    SKYCMD_E_NOT_FOUND        = 12, /* a named key, tensor, model or index is absent  */
    SKYCMD_E_INTERNAL         = 13, /* an invariant failed: a bug, please report      */
    SKYCMD_E_CANCELLED        = 14  /* a callback asked to stop                       */
} skycmd_status;
#define SKYCMD_STATUS_COUNT 15

/* "SKYCMD_E_FORMAT"; "unknown status" for values outside the enum. Static strings. */
SKYCMD_API const char *skycmd_status_name(int status);
/* A short English description, e.g. "damaged or inconsistent file". Static strings. */
SKYCMD_API const char *skycmd_strerror(int status);

/* ---------------------------------------------------------------- handles --------- */
typedef struct skycmd_error     skycmd_error;     /* status + message of a handle-less call */
typedef struct skycmd_options   skycmd_options;   /* a bag of option values               */
typedef struct skycmd_model     skycmd_model;     /* immutable weights + tokenizer        */
typedef struct skycmd_tokenizer skycmd_tokenizer; /* immutable BPE tokenizer              */
typedef struct skycmd_session   skycmd_session;   /* per-thread scratch and options       */
typedef struct skycmd_request   skycmd_request;   /* a parsed /v1/systemone request       */
typedef struct skycmd_response  skycmd_response;  /* answers of one decide call           */

/* ---------------------------------------------------------------- errors ---------- */
SKYCMD_API skycmd_error *skycmd_error_new(void);          /* NULL only when out of memory */
SKYCMD_API void          skycmd_error_free(skycmd_error *err);
SKYCMD_API int           skycmd_error_status(const skycmd_error *err);   /* SKYCMD_OK if none */
/* The message of the last failure recorded in err ("" if none); never NULL. */
SKYCMD_API const char   *skycmd_error_message(const skycmd_error *err);
SKYCMD_API void          skycmd_error_clear(skycmd_error *err);
/* The operating system's error number (errno) behind the failure recorded in err, when a
 * system call failed: ENOENT when a file does not exist (skycmd_model_open of a missing path
 * is SKYCMD_E_IO with ENOENT; skycmd_default_model_path finding no model is
 * SKYCMD_E_NOT_FOUND with ENOENT), EACCES, ENOTDIR, ... 0 when the failure had no such cause,
 * when err records no failure, and for a bad handle. The status stays what it was; this
 * only lets a caller (a binding) tell "no such file" from other input/output errors.
 * Added in 0.1.0. */
SKYCMD_API int           skycmd_error_errno(const skycmd_error *err);

/* Releases a string the library returned through a char ** parameter. NULL is a no-op. */
SKYCMD_API void skycmd_string_free(char *s);

/* ---------------------------------------------------------------- options --------- */
/* Option keys. Pinned values. Each key is either an integer or a string option; using the
 * wrong setter returns SKYCMD_E_INVALID_ARGUMENT. skycmd_option_bounds() gives the range. */
typedef enum skycmd_option {
    /* integer options */
    SKYCMD_OPT_THREADS        = 1,  /* compute threads of a session (0 = one per core);
                                     * on open and quantize options, of the int8
                                     * calibration (results the same for any count)      */
    SKYCMD_OPT_WEIGHTS        = 2,  /* skycmd_weights: how a model keeps its matrices      */
    SKYCMD_OPT_ACTIVATIONS    = 3,  /* skycmd_activations: int8 activation mode of a
                                     * session; on open options, SKYCMD_ACT_Q8 has a
                                     * SKYCMD_WEIGHTS_Q8_ROW open make its single-pass
                                     * choice (see there)                                */
    SKYCMD_OPT_TYPE           = 4,  /* skycmd_type of encoder matrices (convert, quantize) */
    SKYCMD_OPT_HEAD_TYPE      = 5,  /* skycmd_type of the decision head                    */
    SKYCMD_OPT_SEED           = 6,  /* seed of random models                              */
    SKYCMD_OPT_MASSIVE        = 7,  /* random models: number of planted massive channels  */
    SKYCMD_OPT_MAX_ARRAY      = 8,  /* inspect: array items shown (default 8)             */
    SKYCMD_OPT_JSON           = 9,  /* inspect: 1 = one JSON document                     */
    SKYCMD_OPT_MAX_TOKENS     = 10, /* override decision.max_tokens (sequence budget)     */
    SKYCMD_OPT_LAYOUT         = 11, /* skycmd_layout of a random model                    */
    /* session options of long states, truncation and tournaments (laya 0.4.15's
     * Agent.predict_long and laya serve's LAYA_TOURNAMENT_GROUP; docs/compat.md). A request
     * body's "long", "window", "stride", "report_truncation", "tournament_group" override
     * them for that request. Added in 0.1.0. */
    SKYCMD_OPT_LONG           = 12, /* 1 = scan a state longer than one sequence in windows */
    SKYCMD_OPT_WINDOW         = 13, /* state tokens per window (0 = laya's default)       */
    SKYCMD_OPT_STRIDE         = 14, /* tokens between window starts (0 = half the window) */
    SKYCMD_OPT_REPORT_TRUNCATION = 15, /* 0 off; 1 usage.truncated & co. on the wire;
                                        * 2 recorded for the accessors only (wire as is);
                                        * 3 as 2, but a state read in one pass is tokenized
                                        * only as far as a sequence can use it, so a cut
                                        * state's state_tokens and state_tokens_dropped are
                                        * lower bounds (the cost of 0, not of the state's
                                        * size; truncated and the answers are exact) */
    SKYCMD_OPT_TOURNAMENT_GROUP = 20, /* choices over N options by elimination (0 = off)  */
    /* A request read in one pass whose choice has more options than fit their markers is
     * answered by elimination in groups of N instead of refused (default 16, laya's
     * DEFAULT_TOURNAMENT_GROUP: as laya serve with LAYA_TOURNAMENT_GROUP=16 answers it;
     * 0 = refuse, as laya's Agent does). Added in 0.1.0. */
    SKYCMD_OPT_AUTO_TOURNAMENT_GROUP = 26,
    /* session options of one decide call (laya serve's per-request BODY_CONTROLS); 0 = the
     * model's value. Set on the session before skycmd_decide*, they apply to every request
     * it answers until set back to 0. Added in 0.1.0. */
    SKYCMD_OPT_MAX_LEN        = 16, /* laya max_len: sequence budget of this call         */
    SKYCMD_OPT_HEAD_MAX_LEN   = 17, /* laya head_max_len: question + options budget       */
    /* A request body's "max_len" / "head_max_len" override the two above for that request
     * (laya serve's BODY_CONTROLS); values above this cap are refused with laya's message
     * (default 8192, laya serve's LAYA_MAX_TOKEN_BUDGET). Added in 0.1.0. */
    SKYCMD_OPT_MAX_TOKEN_BUDGET = 25,
    /* skycmd_calibrate (laya.calibrate.fit_abstention_thresholds) */
    SKYCMD_OPT_CALIB_ABSTENTION     = 22, /* 1 = also fit per-bucket abstention thresholds  */
    SKYCMD_OPT_CALIB_ABSTAIN_MIN_N  = 23, /* their per-bucket floor (laya: 100)             */
    SKYCMD_OPT_CALIB_CONSERVATIVE   = 24, /* 1 = one pseudo-error margin (laya's default)   */
    /* string options */
    SKYCMD_OPT_NAME           = 100, /* general.name written by convert                   */
    SKYCMD_OPT_PRE            = 101, /* tokenizer.ggml.pre written by convert             */
    SKYCMD_OPT_MODEL_NAME     = 102, /* "model" reported in responses                     */
    /* abstention gate of a session (skycmd_session_set_string): laya's min_confidence as
     * JSON text, a number in [0, 1] or a per-bucket map such as {"choice:2": 0.6,
     * "default": 0.5}; NULL or "" removes it. A request's own "min_confidence" wins. */
    SKYCMD_OPT_MIN_CONFIDENCE = 105,
    /* skycmd_calibrate: the error tolerated among accepted answers, a number in [0, 1] as
     * text (laya's target_error; default "0.1") */
    SKYCMD_OPT_CALIB_TARGET_ERROR = 106
} skycmd_option;

/* GGUF element types, with ggml's numbering. */
typedef enum skycmd_type {
    SKYCMD_TYPE_F32  = 0,
    SKYCMD_TYPE_F16  = 1,
    SKYCMD_TYPE_Q8_0 = 8,
    SKYCMD_TYPE_BF16 = 30
} skycmd_type;

typedef enum skycmd_weights {
    SKYCMD_WEIGHTS_F32      = 0, /* matrices widened to f32 at load, f32 FMA products (the
                                  * exact path, ~1e-6 of laya; the library's default)       */
    SKYCMD_WEIGHTS_Q8       = 1, /* Q8_0 at load, calibrated outlier columns kept in f32    */
    SKYCMD_WEIGHTS_Q8_PLAIN = 2, /* Q8_0 at load without calibration (--no-calib)           */
    SKYCMD_WEIGHTS_BF16X3   = 3, /* matrix products on the CPU's BF16 matrix unit: AMX-BF16
                                  * tiles (attention products too) or arm64 BFMMLA
                                  * (FEAT_BF16); f32/f16 matrices as bf16 hi+lo (3
                                  * products, ~1e-5 relative, within the golden 1e-4 of
                                  * laya), BF16 matrices as is; elsewhere exactly the F32
                                  * path (logged). The CLI's default (decide/serve/bench)
                                  * where the AMX-BF16 tiles are usable                    */
    SKYCMD_WEIGHTS_Q8_ROW   = 4  /* int8 at load with one scale per output row and per
                                  * activation row (int32 sums over whole rows), calibrated
                                  * outlier columns kept in f32; SKYCMD_ACT_Q8X2 runs each
                                  * product twice (the rounding residual as a second pass),
                                  * SKYCMD_ACT_Q8 once but where a probe finds one pass
                                  * changes the answers most (a third of the matrices
                                  * keep two): the fastest int8 mode. The probe (an int8
                                  * pass per matrix: seconds on a base-sized model) runs
                                  * in skycmd_model_open when its options set
                                  * SKYCMD_OPT_ACTIVATIONS to SKYCMD_ACT_Q8, else in the
                                  * first skycmd_session_set_int of SKYCMD_ACT_Q8 on one of
                                  * the model's sessions (others asking meanwhile wait);
                                  * a file skycmd_quantize stored holds its result        */
} skycmd_weights;

typedef enum skycmd_activations {
    SKYCMD_ACT_Q8X2 = 0,  /* two int8 passes: ~15-bit activations (default)               */
    SKYCMD_ACT_Q8   = 1   /* one int8 pass: fastest                                      */
} skycmd_activations;

typedef enum skycmd_layout {
    SKYCMD_LAYOUT_GGUF = 0,  /* one GGUF file                                            */
    SKYCMD_LAYOUT_LAYA = 1   /* a Laya checkpoint directory (safetensors + configs)       */
} skycmd_layout;

/* Progress of long work: done/total in units the call chooses (bytes, tensors, or for a
 * model open millionths of its estimated time; each call's comment says which). done never
 * goes back, and total stays the same within a call. Called on the thread that made the
 * call, from inside it. Return non-zero to cancel; the call then fails with
 * SKYCMD_E_CANCELLED and leaves no partial output (no file, no handle, nothing allocated).
 * Without a callback the work pays nothing for it. */
typedef int (*skycmd_progress_fn)(void *user_data, uint64_t done, uint64_t total);

/* Events worth knowing about (e.g. a weight relayout with its byte count). `level` is
 * 0 debug, 1 info, 2 warning. The message is valid during the call only. */
typedef void (*skycmd_log_fn)(void *user_data, int level, const char *message);

SKYCMD_API skycmd_options *skycmd_options_new(void);
SKYCMD_API void            skycmd_options_free(skycmd_options *opts);
SKYCMD_API int skycmd_options_set_int(skycmd_options *opts, int option, int64_t value);
SKYCMD_API int skycmd_options_set_string(skycmd_options *opts, int option, const char *value);
SKYCMD_API int skycmd_options_get_int(const skycmd_options *opts, int option, int64_t *value);
SKYCMD_API int skycmd_options_set_progress(skycmd_options *opts, skycmd_progress_fn fn,
                                           void *user_data);
SKYCMD_API int skycmd_options_set_log(skycmd_options *opts, skycmd_log_fn fn, void *user_data);
/* Range of an integer option; SKYCMD_E_INVALID_ARGUMENT for unknown or string options. */
SKYCMD_API int skycmd_option_bounds(int option, int64_t *min_value, int64_t *max_value);

/* ---------------------------------------------------------------- files ----------- */
/* Print a GGUF file's header, metadata and tensor table (SKYCMD_OPT_MAX_ARRAY,
 * SKYCMD_OPT_JSON). *out is a NUL-terminated string for skycmd_string_free(). */
SKYCMD_API int skycmd_inspect(const char *gguf_path, const skycmd_options *opts, char **out,
                              skycmd_error *err);

/* Convert a Laya checkpoint directory to one GGUF file (SKYCMD_OPT_TYPE, _HEAD_TYPE, _NAME,
 * _PRE, progress). The output is written to a temporary file and renamed: on failure no
 * partial output exists. */
SKYCMD_API int skycmd_convert(const char *laya_dir, const char *out_path,
                              const skycmd_options *opts, skycmd_error *err);

/* Write a random model ("s1-pico", "s1-nano", "s1-micro", "base", "large", "mmbert-small",
 * "mmbert-base"), deterministic
 * from SKYCMD_OPT_SEED, as a GGUF file or a Laya directory (SKYCMD_OPT_LAYOUT). */
SKYCMD_API int skycmd_random_model(const char *preset, const char *out_path,
                                   const skycmd_options *opts, skycmd_error *err);

/* Re-type the tensors of a GGUF file (SKYCMD_OPT_TYPE, _HEAD_TYPE, progress); every
 * metadata key is kept. With SKYCMD_OPT_WEIGHTS = SKYCMD_WEIGHTS_Q8 (and no other type
 * than the defaults) it writes instead the calibrated int8 model that weights mode makes at
 * load: Q8_0 matrices with their outlier columns in skycmd.int8.* keys, every other tensor
 * as it is; a model opened from it with SKYCMD_WEIGHTS_Q8 skips the calibration and
 * answers exactly as one opened from in_path with SKYCMD_WEIGHTS_Q8 (docs/quantization.md).
 * Progress covers the calibration; SKYCMD_OPT_THREADS sets its compute threads (the file
 * written is the same for any count). Added in 0.1.0. */
SKYCMD_API int skycmd_quantize(const char *in_path, const char *out_path,
                               const skycmd_options *opts, skycmd_error *err);

/* ---------------------------------------------------------------- packed layout --- */
/* Block order of packed (Q8_0) weights, [out, in] logically: a file holds ROW_MAJOR order
 * (block (o, b) at o * blocks_per_row + b); the int8 kernels read INPUT_BLOCK_MAJOR
 * (block (o, b) at b * out + o). The library prepacks once at load and reports the
 * conversion (with its byte count) through the options' log callback.
 *
 * A reference matrix of `type` (only SKYCMD_TYPE_Q8_0; else SKYCMD_E_UNSUPPORTED), three
 * blocks wide so the two orders differ, in file order (kernel_order = 0) or kernel order
 * (1; any other value is SKYCMD_E_INVALID_ARGUMENT). The bytes are static and owned by the
 * library. */
SKYCMD_API int skycmd_packed_fixture(int type, int kernel_order, const uint8_t **bytes,
                                     size_t *n_bytes, int64_t *rows, int64_t *cols);
/* Compare bytes that claim to be the fixture of `type` in the given order: SKYCMD_OK with
 * *message NULL when they agree; SKYCMD_OK with *message (for skycmd_string_free) naming the
 * first block in the wrong place (or the shape/size mismatch) otherwise. */
SKYCMD_API int skycmd_packed_disagreement(int type, const void *bytes, size_t n_bytes,
                                          int64_t rows, int64_t cols, int kernel_order,
                                          char **message);

/* ---------------------------------------------------------------- model ----------- */
/* Open a GGUF decision model (SKYCMD_OPT_WEIGHTS, SKYCMD_OPT_MAX_TOKENS,
 * SKYCMD_OPT_MODEL_NAME, log, progress). The file is read into memory the model owns (not
 * mapped): once open, the model never reads the file again, so writing over it in place or
 * truncating it changes nothing; a file that changes while it is being read is read once
 * more, then refused with SKYCMD_E_IO ("the model file changed while it was being read").
 * *out is NULL on failure.
 * gguf_path may also be a Laya checkpoint directory: it is converted in memory exactly as
 * skycmd_convert() with the same options (SKYCMD_OPT_TYPE, _HEAD_TYPE, _NAME, _PRE) would
 * write it, and answers as that file would (no temporary file).
 * Progress (the options' callback; with a directory too): the whole open is one sequence,
 * total always 1000000 and done the millionths of the open's estimated time: first done = 0
 * before anything is read, then the file's bytes as they are read (8 MiB at a time; a
 * directory: its tensors as they are converted), each tensor as it is checked and packed,
 * and with the int8 weights modes every layer of the calibration's passes, each matrix
 * probed (SKYCMD_WEIGHTS_Q8) and each matrix quantized; last done = total once the model is
 * complete, just before the call returns it. The estimate is of a typical CPU: done/total
 * moves about evenly with time, not exactly. Returning non-zero at any call, the last one
 * included, stops the open there, so within one of those steps (calls came at most 0.2 s
 * apart in the minutes of an int8 load of a base-sized model): SKYCMD_E_CANCELLED, *out
 * NULL, everything freed, and a message naming the step ("PATH: int8 calibration: cancelled
 * by the progress callback"). The model is the same with or without a callback. */
SKYCMD_API int skycmd_model_open(const char *gguf_path, const skycmd_options *opts,
                                 skycmd_model **out, skycmd_error *err);
/* Same, from a caller's buffer that must outlive the model (nothing is copied; progress as
 * above, without the reading). */
SKYCMD_API int skycmd_model_open_buffer(const void *data, size_t size,
                                        const skycmd_options *opts, skycmd_model **out,
                                        skycmd_error *err);
/* The path of the built-in model (s1-pico-flappy.gguf, installed with the library as
 * <datadir>/skycmd/models/s1-pico-flappy.gguf), so that a program or a binding can open it
 * without knowing where it is. Looked for, in order:
 *  1. $SKYCMD_DEFAULT_MODEL when set and not empty: it must name a regular file, and is
 *     returned as given (no other place is tried);
 *  2. beside the library: with L the directory of the file that holds libskycmd's code (the
 *     shared library, or the program or module it was linked into statically; symlinks
 *     resolved), L/../share/skycmd/models/ (a prefix's lib/), L/../../share/skycmd/models/
 *     (a multiarch lib/<triplet>/) and L/share/skycmd/models/ (a build tree), as absolute
 *     paths without "..";
 *  3. <datadir>/skycmd/models/ of the prefix the library was configured with.
 * SKYCMD_OK with *out for skycmd_string_free(). SKYCMD_E_NOT_FOUND with *out NULL when there
 * is none: err's message names the places looked in (or the bad $SKYCMD_DEFAULT_MODEL) and
 * skycmd_error_errno(err) is ENOENT (or stat's error for $SKYCMD_DEFAULT_MODEL). The file is
 * not opened: open it with skycmd_model_open(). Added in 0.1.0. */
SKYCMD_API int skycmd_default_model_path(char **out, skycmd_error *err);
/* SKYCMD_E_BUSY (and nothing freed) while sessions of the model exist. NULL is OK. */
SKYCMD_API int skycmd_model_free(skycmd_model *model);
SKYCMD_API const char *skycmd_model_name(const skycmd_model *model);
/* Borrowed; lives as long as the model. */
SKYCMD_API const skycmd_tokenizer *skycmd_model_tokenizer(const skycmd_model *model);
/* Hyper-parameters by GGUF-style name without the architecture prefix, e.g.
 * "embedding_length", "block_count", "decision.block_count", "decision.max_head_tokens",
 * "decision.max_tokens", "vocab_size", "parameters"; "weights" is the skycmd_weights
 * mode the model computes with (SKYCMD_WEIGHTS_BF16X3 reads SKYCMD_WEIGHTS_F32 where the
 * CPU has no usable BF16 matrix unit); "int8_stored" is 1 when the file stores a calibrated
 * int8 model (skycmd_quantize with SKYCMD_WEIGHTS_Q8), which SKYCMD_WEIGHTS_Q8 takes as it
 * is, 2 when it stores the row-scaled one (skycmd_quantize with SKYCMD_WEIGHTS_Q8_ROW),
 * which SKYCMD_WEIGHTS_Q8_ROW takes as it is, else 0. */
SKYCMD_API int skycmd_model_get_int(const skycmd_model *model, const char *name,
                                    int64_t *value);

/* ---------------------------------------------------------------- tokenizer ------- */
/* Load a Hugging Face tokenizer.json (byte-level BPE, or SentencePiece-style BPE with byte
 * fallback). */
SKYCMD_API int skycmd_tokenizer_open_json(const char *tokenizer_json_path,
                                          skycmd_tokenizer **out, skycmd_error *err);
/* Free a tokenizer from skycmd_tokenizer_open_json(); one borrowed from a model must not
 * be freed (SKYCMD_E_MISUSE). NULL is OK. */
SKYCMD_API int skycmd_tokenizer_free(skycmd_tokenizer *tok);
/* Encode UTF-8 text exactly as HF `tokenizers` does with add_special_tokens=False.
 * Writes at most `capacity` ids and sets *n_ids to the full count: call with capacity 0
 * to size the buffer. Invalid UTF-8 is SKYCMD_E_INVALID_ARGUMENT. */
SKYCMD_API int skycmd_tokenizer_encode(const skycmd_tokenizer *tok, const char *text,
                                       size_t text_len, int32_t *ids, size_t capacity,
                                       size_t *n_ids);
/* Decode ids to UTF-8 (byte-level decoding); *out for skycmd_string_free(). */
SKYCMD_API int skycmd_tokenizer_decode(const skycmd_tokenizer *tok, const int32_t *ids,
                                       size_t n_ids, char **out);
/* The vocabulary entry of an id (byte-level form, e.g. "Ġthe"), or NULL if out of range. */
SKYCMD_API const char *skycmd_tokenizer_token(const skycmd_tokenizer *tok, int32_t id);
SKYCMD_API size_t      skycmd_tokenizer_vocab_size(const skycmd_tokenizer *tok);

typedef enum skycmd_special {
    SKYCMD_SPECIAL_CLS  = 0,
    SKYCMD_SPECIAL_SEP  = 1,
    SKYCMD_SPECIAL_MASK = 2,
    SKYCMD_SPECIAL_PAD  = 3,
    SKYCMD_SPECIAL_UNK  = 4
} skycmd_special;
/* The id of a special token, or -1 if the vocabulary has none. */
SKYCMD_API int32_t skycmd_tokenizer_special_id(const skycmd_tokenizer *tok, int which);

/* ---------------------------------------------------------------- requests -------- */
/* Parse a /v1/systemone body. On failure *out is still set (unless out of memory) and
 * carries the message, e.g. `questions.action: "criteria" must be a non-empty object`;
 * the status is SKYCMD_E_JSON (malformed), SKYCMD_E_REQUEST (invalid) or
 * SKYCMD_E_TOO_LARGE (limits). Free it with skycmd_request_free() either way. */
SKYCMD_API int skycmd_request_parse(const char *json, size_t len, skycmd_request **out);
SKYCMD_API void        skycmd_request_free(skycmd_request *req);
SKYCMD_API const char *skycmd_request_errmsg(const skycmd_request *req);
SKYCMD_API size_t      skycmd_request_question_count(const skycmd_request *req);

/* ---------------------------------------------------------------- sessions -------- */
/* A session holds the scratch memory of one thread (SKYCMD_OPT_THREADS,
 * SKYCMD_OPT_ACTIVATIONS, SKYCMD_OPT_MAX_LEN, SKYCMD_OPT_HEAD_MAX_LEN). Setting
 * SKYCMD_OPT_ACTIVATIONS to SKYCMD_ACT_Q8 on a SKYCMD_WEIGHTS_Q8_ROW model may run its
 * probe first (SKYCMD_WEIGHTS_Q8_ROW), on the session's threads. */
SKYCMD_API int  skycmd_session_new(skycmd_model *model, skycmd_session **out);
SKYCMD_API void skycmd_session_free(skycmd_session *session);
SKYCMD_API int  skycmd_session_set_int(skycmd_session *session, int option, int64_t value);
SKYCMD_API const char *skycmd_session_errmsg(const skycmd_session *session);

/* Answer every question of a request. *out receives a response to free with
 * skycmd_response_free(). Errors leave their message in the session. */
SKYCMD_API int skycmd_decide(skycmd_session *session, const skycmd_request *req,
                             skycmd_response **out);
/* Answer the questions of n requests together: their sequences share the model's batches
 * (each answer is exactly what skycmd_decide would give for its request alone), which
 * saves time when many small requests arrive at once. out[i] receives request i's
 * response (free each with skycmd_response_free). All or nothing: on failure every out[i]
 * is NULL and the session's message names the failing request ("request 2: ..."). n == 0
 * is a no-op. Added in 0.1.0. */
SKYCMD_API int skycmd_decide_batch(skycmd_session *session, const skycmd_request *const *reqs,
                                   size_t n, skycmd_response **out);
/* Answer n requests each on its own account: their sequences share the model's batches as
 * in skycmd_decide_batch (each answer exactly what skycmd_decide gives), but one request's
 * failure does not fail the others. This is what a stream of requests wants (the CLI's
 * --batch, the bindings' streaming forms). out[i] receives request i's response or NULL,
 * status[i] SKYCMD_OK or that request's error; if errmsg is not NULL, errmsg[i] receives
 * NULL (success) or a copy of that request's message (free with skycmd_string_free; NULL
 * too if there was no memory for it). A NULL reqs[i] (SKYCMD_E_INVALID_ARGUMENT) and a
 * request whose skycmd_request_parse failed (its parse status and message) are reported
 * in their own slot. Returns SKYCMD_OK when every slot is filled, whatever they hold;
 * otherwise (misuse, NULL arrays with n > 0, out of memory) an error with every out[i]
 * NULL and the message in the session. n == 0 is a no-op. Added in 0.1.0. */
SKYCMD_API int skycmd_decide_each(skycmd_session *session, const skycmd_request *const *reqs,
                                  size_t n, skycmd_response **out, int *status, char **errmsg);
/* Convenience: parse + decide + JSON in one call; *response_json for skycmd_string_free().
 * On a request error the message is in the session. */
SKYCMD_API int skycmd_decide_json(skycmd_session *session, const char *request_json,
                                  size_t len, char **response_json);

/* ---------------------------------------------------------------- responses ------- */
typedef enum skycmd_qtype {
    SKYCMD_QTYPE_CHOICE = 0,
    SKYCMD_QTYPE_SCORE  = 1,
    SKYCMD_QTYPE_NOUL   = 2
} skycmd_qtype;

SKYCMD_API void skycmd_response_free(skycmd_response *resp);
/* {"model", "answers", "usage": {"input_tokens", "output_tokens": 0}}; borrowed. Written at
 * the first call (decide does not spend time on JSON nobody reads); NULL if that runs out of
 * memory. */
SKYCMD_API const char *skycmd_response_json(const skycmd_response *resp);
SKYCMD_API size_t      skycmd_response_answer_count(const skycmd_response *resp);
SKYCMD_API int64_t     skycmd_response_input_tokens(const skycmd_response *resp);
/* Answer i (request order). Out-of-range i: NULL / -1 / NaN. */
SKYCMD_API const char *skycmd_response_answer_id(const skycmd_response *resp, size_t i);
SKYCMD_API int         skycmd_response_answer_type(const skycmd_response *resp, size_t i);
/* choice: the chosen key; NULL for other types. */
SKYCMD_API const char *skycmd_response_answer_choice(const skycmd_response *resp, size_t i);
/* score: expected level; noul: P(true); choice: probability of the chosen key. */
SKYCMD_API double      skycmd_response_answer_value(const skycmd_response *resp, size_t i);
/* choice/score: confidence; noul: NaN (the wire has none). */
SKYCMD_API double      skycmd_response_answer_confidence(const skycmd_response *resp,
                                                         size_t i);
SKYCMD_API size_t      skycmd_response_option_count(const skycmd_response *resp, size_t i);
/* Option j of answer i: key ("0".."n-1" for score, "false"/"true" for noul) and p. */
SKYCMD_API const char *skycmd_response_option_key(const skycmd_response *resp, size_t i,
                                                  size_t j);
SKYCMD_API double      skycmd_response_option_probability(const skycmd_response *resp,
                                                          size_t i, size_t j);
/* The name of the model that answered (the wire's "model"); borrowed. NULL for a bad
 * handle. Added in 0.1.0. */
SKYCMD_API const char *skycmd_response_model(const skycmd_response *resp);
/* Score answers: the legend of level j (the request's description of that level: a string
 * as its text, any other JSON value as compact JSON; the wire's "legend"); borrowed. NULL
 * when the request described no such level, for other answer types and out of range.
 * Added in 0.1.0. */
SKYCMD_API const char *skycmd_response_option_legend(const skycmd_response *resp, size_t i,
                                                     size_t j);
/* Long states (SKYCMD_OPT_LONG or the body's "long"): the windows the model scored (the
 * wire's usage.windows): 1 for a state that fit, N for N windows; 0 when the decide was not
 * a long one or for a bad handle. Added in 0.1.0. */
SKYCMD_API int64_t skycmd_response_windows(const skycmd_response *resp);
/* The window that decided answer i (the wire's answers.<id>.window): its index, the
 * [token_start, token_end) span into the tokenized state and the window count. SKYCMD_OK;
 * SKYCMD_E_NOT_FOUND when no window decided it (not a long decide, or the state fit one
 * window); SKYCMD_E_MISUSE / SKYCMD_E_INVALID_ARGUMENT for a bad handle, i or pointer.
 * Added in 0.1.0. */
SKYCMD_API int skycmd_response_answer_window(const skycmd_response *resp, size_t i,
                                             int64_t *index, int64_t *token_start,
                                             int64_t *token_end, int64_t *count);
/* Truncation (recorded when SKYCMD_OPT_REPORT_TRUNCATION is 1 or 2, or the body asked for
 * "report_truncation"): usage.truncated as laya reports it (0/1 for one pass; for a long
 * state the number of windows that were cut), -1 when not recorded. Added in 0.1.0. */
SKYCMD_API int64_t skycmd_response_truncated(const skycmd_response *resp);
/* usage.state_tokens (the state's length in tokens; summed over windows for a long state)
 * and usage.state_tokens_dropped (the most any question lost); -1 when not recorded.
 * Added in 0.1.0. */
SKYCMD_API int64_t skycmd_response_state_tokens(const skycmd_response *resp);
SKYCMD_API int64_t skycmd_response_state_tokens_dropped(const skycmd_response *resp);
/* 1 when answer i's sequence lost state tokens (it is in usage.truncated_questions), 0 when
 * not, -1 when not recorded or out of range. Added in 0.1.0. */
SKYCMD_API int skycmd_response_answer_truncated(const skycmd_response *resp, size_t i);
/* Options of answer i that no longer have a token span of their own after the head budget
 * cut them (laya's usage.options): the number of distinct spans, or -1 when none collapsed,
 * truncation was not recorded, or out of range. Added in 0.1.0. */
SKYCMD_API int64_t skycmd_response_answer_options_distinct(const skycmd_response *resp,
                                                           size_t i);
/* Tournaments (SKYCMD_OPT_TOURNAMENT_GROUP or the body's "tournament_group"): the
 * elimination rounds answer i played (the wire's x_tournament.rounds), 0 when it played
 * none, -1 out of range. Added in 0.1.0. */
SKYCMD_API int64_t skycmd_response_answer_rounds(const skycmd_response *resp, size_t i);

/* ---------------------------------------------------------------- abstention ------ */
/* laya.confidence's gate (docs/compat.md, "Abstention"). Set on a session with
 * SKYCMD_OPT_MIN_CONFIDENCE, or per request with the body's "min_confidence"; answers then
 * carry "abstention", "abstention_threshold" (and "low_confidence": true when abstained).
 * Without a gate nothing changes. Added in 0.1.0. */
typedef enum skycmd_abstention {
    SKYCMD_ABSTENTION_NONE        = 0, /* no gate was set: the wire has no such field      */
    SKYCMD_ABSTENTION_PASSED      = 1, /* answer_confidence >= its threshold                */
    SKYCMD_ABSTENTION_ABSTAINED   = 2, /* below it                                          */
    SKYCMD_ABSTENTION_UNEVALUATED = 3  /* no usable confidence                              */
} skycmd_abstention;
/* String session options (SKYCMD_OPT_MIN_CONFIDENCE); errors leave the message in the
 * session (SKYCMD_E_INVALID_ARGUMENT with laya's validation text). */
SKYCMD_API int skycmd_session_set_string(skycmd_session *session, int option,
                                         const char *value);
/* The skycmd_abstention of answer i; -1 out of range. */
SKYCMD_API int skycmd_response_answer_abstention(const skycmd_response *resp, size_t i);
/* The threshold answer i was gated at; NaN without a gate or out of range. */
SKYCMD_API double skycmd_response_answer_abstention_threshold(const skycmd_response *resp,
                                                              size_t i);

/* ---------------------------------------------------------------- calibration ----- */
/* Refit a model's temperatures on a labelled JSONL file exactly as laya 0.4.15's
 * fit_temperature_map does (docs/calibrate.md: the file format, the optimiser, the floors
 * and the clamps), and write out_path: a copy of the GGUF model in which only the
 * <arch>.decision.temperature.* keys differ (atomically; no partial output). out_path NULL
 * fits and reports without writing. Options: SKYCMD_OPT_WEIGHTS, SKYCMD_OPT_THREADS,
 * SKYCMD_OPT_CALIB_* (abstention thresholds), progress (bytes of the labelled file; while
 * the model opens it is asked at 0 bytes, so that a stop cancels the open too). A
 * labelled line that is not a valid request or lacks a target fails the call, naming its
 * line. *report_json (may be NULL) receives the report for skycmd_string_free(): text, or
 * with SKYCMD_OPT_JSON = 1 one JSON document (docs/calibrate.md lists its fields).
 * Added in 0.1.0. */
SKYCMD_API int skycmd_calibrate(const char *model_path, const char *labelled_path,
                                const char *out_path, const skycmd_options *opts,
                                char **report_json, skycmd_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SKYCMD_H */
