/*
 * test_default_model.c - skycmd_default_model_path() and skycmd_error_errno(), as skycmd.h
 * says, and the portability call beneath them (sk_platform_library_path):
 *  - the library's file is this test program (the objects are linked into it), absolute,
 *    symlinks resolved; a buffer too small is refused with "";
 *  - without $SKYCMD_DEFAULT_MODEL the built-in model is found beside the library: this
 *    program sits in <build>/tests, so <build>/share/skycmd/models/s1-pico-flappy.gguf;
 *  - $SKYCMD_DEFAULT_MODEL wins and is returned as given; a missing one is
 *    SKYCMD_E_NOT_FOUND with errno ENOENT and a message naming it (no other place tried),
 *    a directory is refused (EISDIR);
 *  - skycmd_model_open of a missing file is SKYCMD_E_IO with errno ENOENT; other failures,
 *    a success, a clear and a bad handle read 0; out NULL is SKYCMD_E_INVALID_ARGUMENT.
 * Criterion runs each test in its own process, so setenv/unsetenv stay local to a test.
 */
#define _XOPEN_SOURCE 700 /* realpath, setenv */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "util/platform.h"

#define BUILT_IN SKYCMD_BINARY_DIR "/share/skycmd/models/s1-pico-flappy.gguf"

Test(default_model, library_path_is_this_program) {
    char buf[4200];
    const long n = sk_platform_library_path(buf, sizeof buf);
#if defined(__linux__) || defined(__APPLE__)
    cr_assert(n > 0, "the library's file is known here");
    cr_assert_eq((size_t)n, strlen(buf));
    cr_assert_eq(buf[0], '/', "absolute: %s", buf);
    char *self = realpath("/proc/self/exe", NULL);
    if (self) { /* Linux: the objects are linked into this program */
        cr_assert_str_eq(buf, self);
        free(self);
    }
    char small[4];
    cr_assert_eq(sk_platform_library_path(small, sizeof small), -1);
    cr_assert_str_eq(small, "");
#else
    cr_assert(n == -1 || n > 0);
#endif
}

Test(default_model, found_beside_the_library) {
    unsetenv("SKYCMD_DEFAULT_MODEL");
    char *want = realpath(BUILT_IN, NULL);
    cr_assert_not_null(want, "the build tree has %s", BUILT_IN);
    skycmd_error *err = skycmd_error_new();
    char *path = NULL;
    cr_assert_eq(skycmd_default_model_path(&path, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_assert_not_null(path);
    char *got = realpath(path, NULL);
    cr_assert_not_null(got);
    cr_assert_str_eq(got, want);
    cr_assert_null(strstr(path, "/../"), "no '..' in %s", path);
    cr_assert_eq(skycmd_error_errno(err), 0);
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(path, NULL, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_assert_str_eq(skycmd_model_name(m), "s1-pico-flappy");
    skycmd_model_free(m);
    free(got);
    free(want);
    skycmd_string_free(path);
    skycmd_error_free(err);
}

Test(default_model, environment_wins) {
    setenv("SKYCMD_DEFAULT_MODEL", SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.gguf", 1);
    char *path = NULL;
    cr_assert_eq(skycmd_default_model_path(&path, NULL), SKYCMD_OK);
    cr_assert_str_eq(path, SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.gguf");
    skycmd_string_free(path);

    skycmd_error *err = skycmd_error_new();
    setenv("SKYCMD_DEFAULT_MODEL", SKYCMD_BINARY_DIR "/no-such-model.gguf", 1);
    path = (char *)"untouched";
    cr_assert_eq(skycmd_default_model_path(&path, err), SKYCMD_E_NOT_FOUND);
    cr_assert_null(path);
    cr_assert_eq(skycmd_error_status(err), SKYCMD_E_NOT_FOUND);
    cr_assert_eq(skycmd_error_errno(err), ENOENT);
    cr_assert_not_null(strstr(skycmd_error_message(err), "SKYCMD_DEFAULT_MODEL=" SKYCMD_BINARY_DIR "/no-such-model.gguf"),
                       "%s", skycmd_error_message(err));

    setenv("SKYCMD_DEFAULT_MODEL", SKYCMD_BINARY_DIR, 1);
    cr_assert_eq(skycmd_default_model_path(&path, err), SKYCMD_E_NOT_FOUND);
    cr_assert_eq(skycmd_error_errno(err), EISDIR);

    setenv("SKYCMD_DEFAULT_MODEL", "", 1); /* empty: as if unset */
    cr_assert_eq(skycmd_default_model_path(&path, err), SKYCMD_OK);
    cr_assert_eq(skycmd_error_errno(err), 0);
    skycmd_string_free(path);
    cr_assert_eq(skycmd_default_model_path(NULL, err), SKYCMD_E_INVALID_ARGUMENT);
    skycmd_error_free(err);
}

Test(default_model, errno_of_a_missing_file) {
    skycmd_error *err = skycmd_error_new();
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(SKYCMD_BINARY_DIR "/no-such-model.gguf", NULL, &m, err), SKYCMD_E_IO);
    cr_assert_eq(skycmd_error_errno(err), ENOENT, "%s", skycmd_error_message(err));
    cr_assert_eq(skycmd_model_open(SKYCMD_BINARY_DIR "/no-such-dir/model.gguf", NULL, &m, err), SKYCMD_E_IO);
    cr_assert_eq(skycmd_error_errno(err), ENOENT);
    /* not a file's absence: no errno */
    cr_assert_eq(skycmd_model_open(SKYCMD_SOURCE_DIR "/examples/flappy-drone.json", NULL, &m, err), SKYCMD_E_FORMAT);
    cr_assert_eq(skycmd_error_errno(err), 0);
    cr_assert_eq(skycmd_model_open(SKYCMD_BINARY_DIR "/no-such-model.gguf", NULL, &m, err), SKYCMD_E_IO);
    skycmd_error_clear(err);
    cr_assert_eq(skycmd_error_errno(err), 0);
    cr_assert_eq(skycmd_model_open(SKYCMD_BINARY_DIR "/no-such-model.gguf", NULL, &m, err), SKYCMD_E_IO);
    cr_assert_eq(skycmd_model_open(SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.gguf", NULL, &m, err), SKYCMD_OK);
    cr_assert_eq(skycmd_error_errno(err), 0, "a success leaves no errno");
    skycmd_model_free(m);
    cr_assert_eq(skycmd_error_errno(NULL), 0);
    skycmd_error_free(err);
}
