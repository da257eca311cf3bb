/*
 * oom_alloc_fail.c - allocation-failure test (as SQLite's OOM tests): the n-th allocation of
 * an operation fails, for n = 1, 2, ... until the operation runs through without reaching
 * the failure, and every such run must end cleanly: SKYCMD_OK (the failure was absorbed) or
 * SKYCMD_E_NOMEM with a message (any other status fails the test: an allocation that failed
 * must not read as a malformed file, as a cJSON parse's NULL once did), no crash, no leak (the ASan
 * build's LeakSanitizer checks after each operation; every build checks that the library's
 * count of live allocations is back where a clean run leaves it), no partial output file.
 *
 * Mechanism: the test is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=strdup,--wrap=aligned_alloc,--wrap=free around the library's objects
 * (tests/oom/oom.cmake), so every allocation the library makes goes through the counters
 * below; cJSON's allocations are routed through them with cJSON_InitHooks. Allocations of
 * the C library itself (fopen's buffer) are not counted.
 *
 * Operations (a random s1-pico model written once, in a temporary directory):
 *   model_open  skycmd_model_open of the GGUF file, then skycmd_model_free
 *   decide      skycmd_session_new, skycmd_request_parse of examples/flappy-drone.json,
 *               skycmd_decide, skycmd_response_json, the frees (model opened beforehand)
 *   convert     skycmd_convert of the model as a Laya directory to a GGUF file
 *   quantize    skycmd_quantize of the GGUF file to Q8_0
 * Every run is on a thread of its own (run_once). Bounded time: a clean run first records, for each allocation, its call stack (4 frames);
 * then n takes every allocation up to OOM_DENSE (the start of each operation), the first
 * occurrence of every distinct call stack (so every allocation site fails at least once) and
 * every OOM_STRIDE-th allocation beyond. `oom_alloc_fail --all` fails every n instead;
 * `oom_alloc_fail [--all] OPERATION` runs one operation; OOM_VERBOSE=1 prints the call stack
 * of each failed allocation (link with -rdynamic for names).
 * Prints per operation: allocations in a clean run, distinct sites, n tried, and how the
 * runs ended.
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <dirent.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skycmd.h"

#if defined(__SANITIZE_ADDRESS__)
#define OOM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OOM_ASAN 1
#endif
#endif
#ifdef OOM_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#define OOM_DENSE 64
#define OOM_STRIDE 97
#define OOM_FRAMES 4

/* ---------------------------------------------------------------- the allocator hook - */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void *__wrap_aligned_alloc(size_t a, size_t n);
void __wrap_free(void *p);

static _Atomic int g_armed;        /* counting on */
static _Atomic long g_count;       /* allocations since armed */
static _Atomic long g_fail_at;     /* fail this one (1-based), 0 = none */
static _Atomic int g_failed;       /* the failure was reached */
static _Atomic long g_live;        /* allocations minus frees while armed */
static int g_record;               /* clean run: record call stacks */
static int g_verbose;              /* OOM_VERBOSE=1: print the stack of every failed allocation */
static uint64_t *g_keys;           /* per allocation of the clean run: its stack's hash */
static size_t g_nkeys, g_capkeys;

static void record_site(void) {
    void *fr[OOM_FRAMES + 2];
    int n = backtrace(fr, OOM_FRAMES + 2); /* [0] record_site, [1] the hook, [2..] callers */
    uint64_t h = 1469598103934665603ull;
    for (int i = 2; i < n; i++) h = (h ^ (uint64_t)(uintptr_t)fr[i]) * 1099511628211ull;
    if (g_nkeys == g_capkeys) {
        size_t nc = g_capkeys ? g_capkeys * 2 : 4096;
        uint64_t *nk = __real_realloc(g_keys, nc * sizeof *nk);
        if (!nk) abort();
        g_keys = nk;
        g_capkeys = nc;
    }
    g_keys[g_nkeys++] = h;
}

/* 1: this allocation must fail */
static int hook(void) {
    if (!atomic_load(&g_armed)) return 0;
    long c = atomic_fetch_add(&g_count, 1) + 1;
    if (g_record) record_site();
    if (c == atomic_load(&g_fail_at)) {
        atomic_store(&g_failed, 1);
        if (g_verbose) {
            void *fr[8];
            int n = backtrace(fr, 8);
            fprintf(stderr, "oom_alloc_fail: allocation %ld fails here:\n", c);
            backtrace_symbols_fd(fr + 1, n - 1, 2);
        }
        return 1;
    }
    return 0;
}
static void live(void *p, long d) {
    if (p && atomic_load(&g_armed)) atomic_fetch_add(&g_live, d);
}

void *__wrap_malloc(size_t n) {
    if (hook()) return NULL;
    void *p = __real_malloc(n);
    live(p, 1);
    return p;
}
void *__wrap_calloc(size_t k, size_t n) {
    if (hook()) return NULL;
    void *p = __real_calloc(k, n);
    live(p, 1);
    return p;
}
void *__wrap_realloc(void *p, size_t n) {
    if (hook()) return NULL;
    void *q = __real_realloc(p, n);
    if (!p) live(q, 1);
    return q;
}
char *__wrap_strdup(const char *s) {
    if (hook()) return NULL;
    char *p = __real_strdup(s);
    live(p, 1);
    return p;
}
void *__wrap_aligned_alloc(size_t a, size_t n) {
    if (hook()) return NULL;
    void *p = __real_aligned_alloc(a, n);
    live(p, 1);
    return p;
}
void __wrap_free(void *p) {
    live(p, -1);
    __real_free(p);
}
static void *cjson_malloc(size_t n) { return __wrap_malloc(n); }
static void cjson_free(void *p) { __wrap_free(p); }

/* ---------------------------------------------------------------- fixtures ----------- */

static char g_dir[64], g_gguf[128], g_laya[128], g_out[128], g_request_path[512];
static char *g_request;
static size_t g_request_len;
static skycmd_model *g_model;
static skycmd_options *g_q8;

static void die(const char *what, const skycmd_error *err) {
    fprintf(stderr, "oom_alloc_fail: %s: %s\n", what, err ? skycmd_error_message(err) : "");
    exit(1);
}

static void rm_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            rm_tree(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Files in g_dir besides the fixtures: a partial output or a temporary file left behind. */
static int stray_files(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "m.gguf") ||
            !strcmp(de->d_name, "laya"))
            continue;
        fprintf(stderr, "oom_alloc_fail: left behind: %s/%s\n", g_dir, de->d_name);
        n++;
    }
    if (d) closedir(d);
    return n;
}

/* ---------------------------------------------------------------- operations --------- */

/* Each returns a status; *msg_ok = 0 when a failure came without a message. */
static int op_model_open(skycmd_error *err) {
    skycmd_model *m = NULL;
    int st = skycmd_model_open(g_gguf, NULL, &m, err);
    if (st == SKYCMD_OK && skycmd_model_free(m) != SKYCMD_OK) abort();
    if (st != SKYCMD_OK && m) abort();
    return st;
}

static int op_decide(skycmd_error *err) {
    (void)err;
    skycmd_session *s = NULL;
    int st = skycmd_session_new(g_model, &s);
    if (st != SKYCMD_OK) return st;
    skycmd_request *q = NULL;
    st = skycmd_request_parse(g_request, g_request_len, &q);
    if (st == SKYCMD_OK) {
        skycmd_response *r = NULL;
        st = skycmd_decide(s, q, &r);
        if (st == SKYCMD_OK) {
            const char *json = skycmd_response_json(r);
            if (!json) st = SKYCMD_E_NOMEM; /* documented: NULL only when out of memory */
        } else if (r) {
            abort();
        }
        skycmd_response_free(r);
    }
    skycmd_request_free(q);
    skycmd_session_free(s);
    return st;
}

static int op_convert(skycmd_error *err) {
    int st = skycmd_convert(g_laya, g_out, NULL, err);
    if (st == SKYCMD_OK) unlink(g_out);
    return st;
}

static int op_quantize(skycmd_error *err) {
    int st = skycmd_quantize(g_gguf, g_out, g_q8, err);
    if (st == SKYCMD_OK) unlink(g_out);
    return st;
}

struct op {
    const char *name;
    int (*run)(skycmd_error *err);
    int writes; /* leaves no file on failure */
};

/* Each run goes on a thread of its own: the library's per-thread buffers (the kernels'
 * scratch, made on first use and freed when the thread exits) are then made and freed
 * inside every run, so every run makes the same allocations and leaves none behind. */
struct run_arg {
    const struct op *o;
    skycmd_error *err;
    int st;
};
static void *run_thread(void *v) {
    struct run_arg *a = v;
    a->st = a->o->run(a->err);
    return NULL;
}

static int run_once(const struct op *o, skycmd_error *err, long fail_at, long *count, long *live_delta) {
    atomic_store(&g_count, 0);
    atomic_store(&g_fail_at, fail_at);
    atomic_store(&g_failed, 0);
    atomic_store(&g_live, 0);
    atomic_store(&g_armed, 1);
    struct run_arg a = {o, err, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, run_thread, &a) != 0 || pthread_join(t, NULL) != 0) abort();
    int st = a.st;
    atomic_store(&g_armed, 0);
    *count = atomic_load(&g_count);
    *live_delta = atomic_load(&g_live);
    return st;
}

static int test_op(const struct op *o, int all) {
    skycmd_error *err = skycmd_error_new();
    if (!err) die("skycmd_error_new", NULL);
    long total = 0, base_live = 0;
    g_record = 1;
    g_nkeys = 0;
    int st = run_once(o, err, 0, &total, &base_live);
    g_record = 0;
    if (st != SKYCMD_OK) die(o->name, err);
    /* which n to fail */
    size_t n_sites = 0;
    unsigned char *pick = __real_calloc((size_t)total + 1, 1);
    uint64_t *seen = __real_calloc(g_nkeys + 1, sizeof *seen);
    if (!pick || !seen) abort();
    for (size_t i = 0; i < g_nkeys; i++) {
        size_t j = 0;
        while (j < n_sites && seen[j] != g_keys[i]) j++;
        if (j == n_sites) {
            seen[n_sites++] = g_keys[i];
            pick[i + 1] = 1;
        }
        if (all || i < OOM_DENSE || (i + 1) % OOM_STRIDE == 0) pick[i + 1] = 1;
    }
    long tried = 0, nomem = 0, other = 0, absorbed = 0, bad = 0;
    for (long n = 1; n <= total + 1; n++) {
        if (n <= total && !pick[n]) continue;
        long count = 0, d = 0;
        skycmd_error_free(err);
        atomic_store(&g_armed, 0);
        err = skycmd_error_new();
        if (!err) abort();
        st = run_once(o, err, n, &count, &d);
        tried++;
        int hit = atomic_load(&g_failed);
        if (!hit) {
            /* ran through without reaching the n-th allocation: only past the end */
            if (n <= total) {
                fprintf(stderr, "oom_alloc_fail: %s: allocation %ld of %ld not reached (nondeterministic)\n",
                        o->name, n, total);
                bad++;
            } else if (st != SKYCMD_OK) {
                fprintf(stderr, "oom_alloc_fail: %s: the clean run failed: %s\n", o->name, skycmd_status_name(st));
                bad++;
            }
            break;
        }
        if (st == SKYCMD_OK) {
            absorbed++;
            if (g_verbose) fprintf(stderr, "oom_alloc_fail: %s: n=%ld: absorbed (SKYCMD_OK)\n", o->name, n);
        } else {
            const char *msg = skycmd_error_message(err);
            if (st == SKYCMD_E_NOMEM) nomem++;
            else other++;
            if (st != SKYCMD_E_NOMEM) {
                fprintf(stderr, "oom_alloc_fail: %s: n=%ld: %s (%s), not SKYCMD_E_NOMEM\n", o->name, n,
                        skycmd_status_name(st), msg ? msg : "");
                bad++;
            }
            if (o->run != op_decide && (!msg || !msg[0])) {
                fprintf(stderr, "oom_alloc_fail: %s: n=%ld: %s without a message\n", o->name, n,
                        skycmd_status_name(st));
                bad++;
            }
        }
        if (d != base_live) {
            fprintf(stderr, "oom_alloc_fail: %s: n=%ld: %ld allocations still live (a clean run: %ld)\n",
                    o->name, n, d, base_live);
            bad++;
        }
        if (o->writes && stray_files()) {
            fprintf(stderr, "oom_alloc_fail: %s: n=%ld: output left behind\n", o->name, n);
            bad++;
            unlink(g_out);
        }
    }
#ifdef OOM_ASAN
    if (__lsan_do_recoverable_leak_check()) {
        fprintf(stderr, "oom_alloc_fail: %s: leaks (above)\n", o->name);
        bad++;
    }
#endif
    printf("%-10s %6ld allocations in a clean run, %4zu distinct sites (%d frames), %5ld failure runs: "
           "%ld SKYCMD_E_NOMEM, %ld other errors, %ld absorbed%s\n",
           o->name, total, n_sites, OOM_FRAMES, tried - 1, nomem, other, absorbed, bad ? "  FAILED" : "");
    fflush(stdout);
    __real_free(pick);
    __real_free(seen);
    skycmd_error_free(err);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    int all = argc > 1 && strcmp(argv[1], "--all") == 0;
    g_verbose = getenv("OOM_VERBOSE") && getenv("OOM_VERBOSE")[0] == '1';
    const char *only = NULL;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-') only = argv[i];
    cJSON_Hooks hooks = {cjson_malloc, cjson_free};
    cJSON_InitHooks(&hooks);
    {
        void *fr[4];
        backtrace(fr, 4); /* loads the unwinder before anything is counted */
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/skycmd-oom-XXXXXX");
    if (!mkdtemp(g_dir)) die("mkdtemp", NULL);
    snprintf(g_gguf, sizeof g_gguf, "%s/m.gguf", g_dir);
    snprintf(g_laya, sizeof g_laya, "%s/laya", g_dir);
    snprintf(g_out, sizeof g_out, "%s/out.gguf", g_dir);
    skycmd_error *err = skycmd_error_new();
    skycmd_options *laya = skycmd_options_new();
    g_q8 = skycmd_options_new();
    if (!err || !laya || !g_q8) die("setup", NULL);
    skycmd_options_set_int(laya, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA);
    skycmd_options_set_int(g_q8, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0);
    if (skycmd_random_model("s1-pico", g_gguf, NULL, err) != SKYCMD_OK) die("random s1-pico", err);
    if (skycmd_random_model("s1-pico", g_laya, laya, err) != SKYCMD_OK) die("random s1-pico --layout laya", err);
    if (skycmd_model_open(g_gguf, NULL, &g_model, err) != SKYCMD_OK) die("open", err);
    snprintf(g_request_path, sizeof g_request_path, "%s/examples/flappy-drone.json", SKYCMD_SOURCE_DIR);
    FILE *f = fopen(g_request_path, "rb");
    if (!f) die(g_request_path, NULL);
    g_request = __real_malloc(1 << 16);
    g_request_len = g_request ? fread(g_request, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (!g_request_len) die("read request", NULL);

    static const struct op ops[] = {
        {"model_open", op_model_open, 0},
        {"decide", op_decide, 0},
        {"convert", op_convert, 1},
        {"quantize", op_quantize, 1},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!only || strcmp(only, ops[i].name) == 0) bad |= test_op(&ops[i], all);

    skycmd_model_free(g_model);
    skycmd_options_free(laya);
    skycmd_options_free(g_q8);
    skycmd_error_free(err);
    __real_free(g_request);
    __real_free(g_keys);
    rm_tree(g_dir);
    return bad;
}
