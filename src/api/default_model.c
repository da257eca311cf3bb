/* default_model.c - skycmd_default_model_path(): where the built-in model s1-pico-flappy.gguf
 * was installed with the library, found from the library's own location (the contract is in
 * skycmd.h): $SKYCMD_DEFAULT_MODEL; beside the file that holds the library's code (an
 * installed prefix's lib/ or lib/<multiarch>/, or a build tree); the data directory the
 * library was configured with. Nothing is opened; the file is only stat()ed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "../util/platform.h"

/* The data directory of the build's install prefix (CMake's CMAKE_INSTALL_FULL_DATADIR). */
#ifndef SKYCMD_INSTALL_DATADIR
#define SKYCMD_INSTALL_DATADIR "/usr/local/share"
#endif

#define SK_DEFAULT_MODEL_FILE "s1-pico-flappy.gguf"
#define SK_MODELS_DIR "share/skycmd/models/"
#define SK_LIB_ROOM 4097   /* a path of up to PATH_MAX bytes */
#define SK_PATH_ROOM 4200  /* one with the suffix */

/* 0 when path names a regular file; else the errno of stat (a directory: EISDIR). */
static int regular_file(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return errno ? errno : ENOENT;
    return S_ISREG(sb.st_mode) ? 0 : EISDIR;
}

static int give(const char *path, char **out, skycmd_error *err) {
    const size_t n = strlen(path);
    char *copy = malloc(n + 1);
    if (!copy) return sk_api_fail(err, SKYCMD_E_NOMEM, "default model: out of memory");
    memcpy(copy, path, n + 1);
    *out = copy;
    return sk_api_report(err, NULL, SKYCMD_OK);
}

/* Cut the last component of an absolute path in place ("/a/b" -> "/a", "/a" -> ""). */
static void parent(char *dir) {
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
}

int skycmd_default_model_path(char **out, skycmd_error *err) {
    if (!out) return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "default model: out is NULL");
    *out = NULL;
    sk_err e = {0};
    const char *env = getenv("SKYCMD_DEFAULT_MODEL");
    if (env && env[0]) {
        const int why = regular_file(env);
        if (why == 0) return give(env, out, err);
        sk_fail_errno(&e, SKYCMD_E_NOT_FOUND, why, "SKYCMD_DEFAULT_MODEL=%s: not a readable file (%s)",
                      env, why == EISDIR ? "not a regular file" : strerror(why));
        return sk_api_report(err, &e, SKYCMD_E_NOT_FOUND);
    }

    /* The places, in order; an empty slot is skipped (and a repeat of an earlier one). */
    char tried[4][SK_PATH_ROOM] = {{0}};
    char lib[SK_LIB_ROOM];
    if (sk_platform_library_path(lib, sizeof lib) > 0) {
        parent(lib); /* L: the library's directory */
        char up[SK_LIB_ROOM], up2[SK_LIB_ROOM];
        snprintf(up, sizeof up, "%s", lib);
        parent(up);
        snprintf(up2, sizeof up2, "%s", up);
        parent(up2);
        if (lib[0]) {
            snprintf(tried[0], SK_PATH_ROOM, "%s/" SK_MODELS_DIR SK_DEFAULT_MODEL_FILE, up);
            if (up[0]) snprintf(tried[1], SK_PATH_ROOM, "%s/" SK_MODELS_DIR SK_DEFAULT_MODEL_FILE, up2);
            snprintf(tried[2], SK_PATH_ROOM, "%s/" SK_MODELS_DIR SK_DEFAULT_MODEL_FILE, lib);
        }
    }
    snprintf(tried[3], SK_PATH_ROOM, "%s/skycmd/models/" SK_DEFAULT_MODEL_FILE, SKYCMD_INSTALL_DATADIR);
    int st = SKYCMD_E_NOT_FOUND;
    size_t used = 0;
    for (int i = 0; i < 4 && st != SKYCMD_OK; i++) {
        int repeat = !tried[i][0];
        for (int j = 0; j < i && !repeat; j++) repeat = strcmp(tried[i], tried[j]) == 0;
        if (repeat) continue;
        if (regular_file(tried[i]) == 0) {
            st = give(tried[i], out, err);
            break;
        }
        /* "looked in A, B, C" (a message cut at its end is fine: it is for people) */
        const int w = snprintf(e.msg + used, used < sizeof e.msg ? sizeof e.msg - used : 0,
                               "%s%s", used ? ", " : "", tried[i]);
        if (w > 0) used += (size_t)w;
        if (used >= sizeof e.msg) used = sizeof e.msg - 1;
    }
    if (st != SKYCMD_E_NOT_FOUND) return st;
    char looked[SK_ERR_MSG_MAX];
    memcpy(looked, e.msg, sizeof looked);
    sk_fail_errno(&e, SKYCMD_E_NOT_FOUND, ENOENT,
                  "the built-in model " SK_DEFAULT_MODEL_FILE " is not installed (looked in %s); "
                  "set SKYCMD_DEFAULT_MODEL or open a model by its path", looked);
    return sk_api_report(err, &e, SKYCMD_E_NOT_FOUND);
}
