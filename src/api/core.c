/* core.c - versions, status strings, error objects and option bags of the public API. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "../util/platform.h"

#ifndef SKYCMD_GIT_COMMIT
#define SKYCMD_GIT_COMMIT "unknown"
#endif
#ifndef SKYCMD_BUILD_TYPE
#define SKYCMD_BUILD_TYPE "unknown"
#endif

unsigned skycmd_version_number(void) { return SKYCMD_VERSION_NUMBER; }
const char *skycmd_version_string(void) { return SKYCMD_VERSION_STRING; }
unsigned skycmd_abi_version(void) { return SKYCMD_ABI_VERSION; }
const char *skycmd_build_id(void) { return "git " SKYCMD_GIT_COMMIT " " SKYCMD_BUILD_TYPE; }

int skycmd_check_version(unsigned header_version_number, skycmd_error *err) {
    unsigned lib = SKYCMD_VERSION_NUMBER;
    if (header_version_number / 10000 != lib / 10000 || header_version_number > lib)
        return sk_api_fail(err, SKYCMD_E_VERSION,
                           "libskycmd %s is older than or incompatible with the header "
                           "version %u.%u.%u this program was built against",
                           SKYCMD_VERSION_STRING, header_version_number / 10000,
                           header_version_number / 100 % 100, header_version_number % 100);
    return sk_api_report(err, NULL, SKYCMD_OK); /* a success clears err, as every call's */
}

/* One table gives both the names and the messages, so they cannot drift apart. */
#define SK_STATUS_TABLE(X)                                                   \
    X(SKYCMD_OK, "success")                                                  \
    X(SKYCMD_E_INVALID_ARGUMENT, "invalid argument")                         \
    X(SKYCMD_E_MISUSE, "library misuse (bad handle or call order)")          \
    X(SKYCMD_E_NOMEM, "out of memory")                                       \
    X(SKYCMD_E_IO, "input/output error")                                     \
    X(SKYCMD_E_FORMAT, "damaged or inconsistent file")                       \
    X(SKYCMD_E_UNSUPPORTED, "not supported")                                 \
    X(SKYCMD_E_BUSY, "object still in use")                                  \
    X(SKYCMD_E_JSON, "malformed JSON")                                       \
    X(SKYCMD_E_REQUEST, "invalid request")                                   \
    X(SKYCMD_E_TOO_LARGE, "limit exceeded")                                  \
    X(SKYCMD_E_VERSION, "incompatible library version")                      \
    X(SKYCMD_E_NOT_FOUND, "not found")                                       \
    X(SKYCMD_E_INTERNAL, "internal error")                                   \
    X(SKYCMD_E_CANCELLED, "cancelled")

const char *skycmd_status_name(int status) {
    switch (status) {
#define X(name, msg) case name: return #name;
        SK_STATUS_TABLE(X)
#undef X
    default: return "unknown status";
    }
}

const char *skycmd_strerror(int status) {
    switch (status) {
#define X(name, msg) case name: return msg;
        SK_STATUS_TABLE(X)
#undef X
    default: return "unknown status";
    }
}

skycmd_error *skycmd_error_new(void) {
    skycmd_error *err = calloc(1, sizeof *err);
    if (err) err->tag = SK_TAG_ERROR;
    return err;
}

void skycmd_error_free(skycmd_error *err) {
    if (!err || err->tag != SK_TAG_ERROR) return;
    err->tag = SK_TAG_DEAD;
    free(err);
}

int skycmd_error_status(const skycmd_error *err) {
    if (!err || err->tag != SK_TAG_ERROR) return SKYCMD_E_MISUSE;
    return err->e.status;
}

const char *skycmd_error_message(const skycmd_error *err) {
    if (!err || err->tag != SK_TAG_ERROR) return "invalid skycmd_error handle";
    return err->e.msg;
}

int skycmd_error_errno(const skycmd_error *err) {
    if (!err || err->tag != SK_TAG_ERROR || err->e.status == SKYCMD_OK) return 0;
    return err->e.sys_errno;
}

void skycmd_error_clear(skycmd_error *err) {
    if (err && err->tag == SK_TAG_ERROR) sk_err_clear(&err->e);
}

void skycmd_string_free(char *s) { free(s); }

int sk_api_report(skycmd_error *err, const sk_err *e, int status) {
    if (err && err->tag == SK_TAG_ERROR) {
        err->e.status = status;
        err->e.sys_errno = status != SKYCMD_OK && e ? e->sys_errno : 0;
        if (status == SKYCMD_OK)
            err->e.msg[0] = '\0';
        else if (e && e->msg[0])
            memcpy(err->e.msg, e->msg, sizeof err->e.msg);
        else
            snprintf(err->e.msg, sizeof err->e.msg, "%s", skycmd_strerror(status));
    }
    return status;
}

int sk_api_fail(skycmd_error *err, int status, const char *fmt, ...) {
    if (err && err->tag == SK_TAG_ERROR) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->e.msg, sizeof err->e.msg, fmt, ap);
        va_end(ap);
        err->e.status = status;
        err->e.sys_errno = 0;
    }
    return status;
}

/* ---- options ---- */

typedef struct sk_opt_desc {
    int id;
    int is_string;
    int64_t min, max, dflt;
} sk_opt_desc;

static const sk_opt_desc k_opts[] = {
    {SKYCMD_OPT_THREADS, 0, 0, 256, 1},
    {SKYCMD_OPT_WEIGHTS, 0, 0, 4, SKYCMD_WEIGHTS_F32},
    {SKYCMD_OPT_ACTIVATIONS, 0, 0, 1, SKYCMD_ACT_Q8X2},
    {SKYCMD_OPT_TYPE, 0, 0, 30, SKYCMD_TYPE_F16},
    {SKYCMD_OPT_HEAD_TYPE, 0, 0, 30, SKYCMD_TYPE_F32},
    {SKYCMD_OPT_SEED, 0, 0, INT64_MAX, 42},
    {SKYCMD_OPT_MASSIVE, 0, 0, 64, 0},
    {SKYCMD_OPT_MAX_ARRAY, 0, 0, INT64_MAX, 8},
    {SKYCMD_OPT_JSON, 0, 0, 1, 0},
    {SKYCMD_OPT_MAX_TOKENS, 0, 0, 1 << 20, 0},
    {SKYCMD_OPT_LAYOUT, 0, 0, 1, SKYCMD_LAYOUT_GGUF},
    {SKYCMD_OPT_LONG, 0, 0, 1, 0},
    /* the bounds of request.h's SK_LONG_MAX_WINDOW and SK_TOURNAMENT_MAX_GROUP (session.c
     * checks that they agree) */
    {SKYCMD_OPT_WINDOW, 0, 0, (int64_t)1 << 20, 0},
    {SKYCMD_OPT_STRIDE, 0, 0, (int64_t)1 << 20, 0},
    {SKYCMD_OPT_REPORT_TRUNCATION, 0, 0, 3, 0},
    {SKYCMD_OPT_TOURNAMENT_GROUP, 0, 0, 100, 0},
    {SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, 0, 0, 100, 16},
    {SKYCMD_OPT_MAX_LEN, 0, 0, 1 << 20, 0},
    {SKYCMD_OPT_HEAD_MAX_LEN, 0, 0, 1 << 20, 0},
    {SKYCMD_OPT_MAX_TOKEN_BUDGET, 0, 1, 1 << 20, 8192},
    {SKYCMD_OPT_NAME, 1, 0, 0, 0},
    {SKYCMD_OPT_PRE, 1, 0, 0, 0},
    {SKYCMD_OPT_MODEL_NAME, 1, 0, 0, 0},
    /* calibrate: laya.calibrate.fit_abstention_thresholds and its parameters */
    {SKYCMD_OPT_CALIB_ABSTENTION, 0, 0, 1, 0},
    {SKYCMD_OPT_CALIB_ABSTAIN_MIN_N, 0, 1, INT32_MAX, 100},
    {SKYCMD_OPT_CALIB_CONSERVATIVE, 0, 0, 1, 1},
    {SKYCMD_OPT_MIN_CONFIDENCE, 1, 0, 0, 0},
    {SKYCMD_OPT_CALIB_TARGET_ERROR, 1, 0, 0, 0},
};

static const sk_opt_desc *find_opt(int id) {
    for (size_t i = 0; i < sizeof k_opts / sizeof k_opts[0]; i++)
        if (k_opts[i].id == id) return &k_opts[i];
    return NULL;
}

static int is_type_value(int64_t v) {
    return v == SKYCMD_TYPE_F32 || v == SKYCMD_TYPE_F16 || v == SKYCMD_TYPE_BF16 ||
           v == SKYCMD_TYPE_Q8_0;
}

skycmd_options *skycmd_options_new(void) {
    skycmd_options *o = calloc(1, sizeof *o);
    if (o) o->tag = SK_TAG_OPTIONS;
    return o;
}

void skycmd_options_free(skycmd_options *o) {
    if (!o || o->tag != SK_TAG_OPTIONS) return;
    for (int i = 0; i < SK_OPT_STR_MAX; i++) free(o->strs[i]);
    o->tag = SK_TAG_DEAD;
    free(o);
}

int sk_opts_ok(const skycmd_options *o) { return !o || o->tag == SK_TAG_OPTIONS; }

int skycmd_options_set_int(skycmd_options *o, int option, int64_t value) {
    if (!o || o->tag != SK_TAG_OPTIONS) return SKYCMD_E_MISUSE;
    const sk_opt_desc *d = find_opt(option);
    if (!d || d->is_string || option >= SK_OPT_INT_MAX) return SKYCMD_E_INVALID_ARGUMENT;
    if (value < d->min || value > d->max) return SKYCMD_E_INVALID_ARGUMENT;
    if ((option == SKYCMD_OPT_TYPE || option == SKYCMD_OPT_HEAD_TYPE) && !is_type_value(value))
        return SKYCMD_E_INVALID_ARGUMENT;
    o->ints[option] = value;
    o->int_set[option] = 1;
    return SKYCMD_OK;
}

int skycmd_options_get_int(const skycmd_options *o, int option, int64_t *value) {
    if (!o || o->tag != SK_TAG_OPTIONS || !value) return SKYCMD_E_MISUSE;
    const sk_opt_desc *d = find_opt(option);
    if (!d || d->is_string) return SKYCMD_E_INVALID_ARGUMENT;
    *value = o->int_set[option] ? o->ints[option] : d->dflt;
    return SKYCMD_OK;
}

int skycmd_options_set_string(skycmd_options *o, int option, const char *value) {
    if (!o || o->tag != SK_TAG_OPTIONS) return SKYCMD_E_MISUSE;
    const sk_opt_desc *d = find_opt(option);
    if (!d || !d->is_string) return SKYCMD_E_INVALID_ARGUMENT;
    char *copy = NULL;
    if (value) {
        copy = sk_strdup(value);
        if (!copy) return SKYCMD_E_NOMEM;
    }
    free(o->strs[option - 100]);
    o->strs[option - 100] = copy;
    return SKYCMD_OK;
}

int skycmd_options_set_progress(skycmd_options *o, skycmd_progress_fn fn, void *user_data) {
    if (!o || o->tag != SK_TAG_OPTIONS) return SKYCMD_E_MISUSE;
    o->progress = fn;
    o->progress_ud = user_data;
    return SKYCMD_OK;
}

int skycmd_options_set_log(skycmd_options *o, skycmd_log_fn fn, void *user_data) {
    if (!o || o->tag != SK_TAG_OPTIONS) return SKYCMD_E_MISUSE;
    o->log = fn;
    o->log_ud = user_data;
    return SKYCMD_OK;
}

int skycmd_option_bounds(int option, int64_t *min_value, int64_t *max_value) {
    const sk_opt_desc *d = find_opt(option);
    if (!d || d->is_string) return SKYCMD_E_INVALID_ARGUMENT;
    if (min_value) *min_value = d->min;
    if (max_value) *max_value = d->max;
    return SKYCMD_OK;
}

int64_t sk_opt_int(const skycmd_options *o, int option, int64_t dflt) {
    if (o && o->tag == SK_TAG_OPTIONS && option > 0 && option < SK_OPT_INT_MAX &&
        o->int_set[option])
        return o->ints[option];
    return dflt;
}

int sk_opt_threads(const skycmd_options *opts) {
    const int64_t n = sk_opt_int(opts, SKYCMD_OPT_THREADS, 1);
    return n > 0 ? (int)n : sk_platform_cpu_count();
}

const char *sk_opt_str(const skycmd_options *o, int option, const char *dflt) {
    if (o && o->tag == SK_TAG_OPTIONS && option >= 100 && option < 100 + SK_OPT_STR_MAX &&
        o->strs[option - 100])
        return o->strs[option - 100];
    return dflt;
}

void sk_opt_log(const skycmd_options *o, int level, const char *fmt, ...) {
    if (!o || o->tag != SK_TAG_OPTIONS || !o->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->log(o->log_ud, level, msg);
}
