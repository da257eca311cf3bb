/*
 * api.h - internals of the public handle layer: the definitions of the opaque structs
 * that several files of src/api share, handle tags for misuse detection, and the bridge from
 * the internal sk_err to a caller's skycmd_error.
 */
#ifndef SK_API_H
#define SK_API_H

#include <stdio.h>

#include "skycmd.h"
#include "../util/util.h"

/* Every public handle starts with a tag so that a wrong or freed handle is detected. */
enum {
    SK_TAG_ERROR = 0x45525221u,     /* "ERR!" */
    SK_TAG_OPTIONS = 0x4F505453u,   /* "OPTS" */
    SK_TAG_MODEL = 0x4D4F444Cu,     /* "MODL" */
    SK_TAG_TOKENIZER = 0x544F4B4Eu, /* "TOKN" */
    SK_TAG_SESSION = 0x53455353u,   /* "SESS" */
    SK_TAG_REQUEST = 0x52455155u,   /* "REQU" */
    SK_TAG_RESPONSE = 0x52455350u,  /* "RESP" */
    SK_TAG_DEAD = 0xDEADBEEFu
};

struct skycmd_error {
    uint32_t tag;
    sk_err e;
};

#define SK_OPT_INT_MAX 32 /* room for the options up to 31 */
#define SK_OPT_STR_MAX 8  /* room for the string options 100..107 */

struct skycmd_options {
    uint32_t tag;
    int64_t ints[SK_OPT_INT_MAX];     /* indexed by skycmd_option (1..31) */
    unsigned char int_set[SK_OPT_INT_MAX];
    char *strs[SK_OPT_STR_MAX];       /* indexed by option - 100 */
    skycmd_progress_fn progress;
    void *progress_ud;
    skycmd_log_fn log;
    void *log_ud;
};

/* Copy an internal error into a caller's error object (NULL-safe) and return status. */
int sk_api_report(skycmd_error *err, const sk_err *e, int status);
int sk_api_fail(skycmd_error *err, int status, const char *fmt, ...) SK_PRINTF(3, 4);

/* Option lookup with a default when opts is NULL or the option is unset. */
int64_t sk_opt_int(const skycmd_options *opts, int option, int64_t dflt);
/* SKYCMD_OPT_THREADS as a thread count (default 1; 0 = one per CPU this thread may use). */
int sk_opt_threads(const skycmd_options *opts);
/* The converter's options from SKYCMD_OPT_TYPE, _HEAD_TYPE, _NAME, _PRE and the progress
 * callback, with skycmd_convert's defaults (api/convert.c). */
struct sk_convert_opts;
int sk_api_convert_opts(const skycmd_options *opts, struct sk_convert_opts *o, skycmd_error *err);
const char *sk_opt_str(const skycmd_options *opts, int option, const char *dflt);
/* Validate a caller's options handle (NULL is allowed: all defaults). */
int sk_opts_ok(const skycmd_options *opts);

/* skycmd_calibrate's work on a model already open and a labelled stream (model_path and
 * labelled_path name them in messages and the report; total is the stream's size in bytes
 * for progress, 0 if unknown). The model stays open and fp is not closed: the fuzz target
 * calls it for every input on one model. On failure *report_json is NULL and e says why. */
int sk_calibrate_stream(skycmd_model *model, const char *model_path, FILE *fp, const char *labelled_path,
                        uint64_t total, const char *out_path, const skycmd_options *opts, char **report_json,
                        sk_err *e);
/* Emit a log event through the options' callback, if any. */
void sk_opt_log(const skycmd_options *opts, int level, const char *fmt, ...) SK_PRINTF(3, 4);

#endif
