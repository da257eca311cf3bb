/* consumer.c - a minimal program on libskycmd's public API, used to check that an installed
 * tree (or the Debian packages) can be built against with pkg-config or find_package.
 *
 *   consumer                 check the library against this header, print versions and
 *                            where the library finds the built-in model
 *   consumer FILE.gguf       ... and inspect a GGUF file
 *
 * Exit 0 on success; 1 with a message on stderr otherwise (e.g. a library older than the
 * header this program was compiled with). */
#include <stdio.h>

#include <skycmd.h>

int main(int argc, char **argv) {
    skycmd_error *err = skycmd_error_new();
    if (!err) return 1;
    int st = skycmd_check_version(SKYCMD_VERSION_NUMBER, err);
    if (st != SKYCMD_OK) {
        fprintf(stderr, "consumer: %s: %s\n", skycmd_status_name(st), skycmd_error_message(err));
        skycmd_error_free(err);
        return 1;
    }
    printf("header %s, library %s, ABI %u\n", SKYCMD_VERSION_STRING, skycmd_version_string(),
           skycmd_abi_version());
    {   /* where the library finds the built-in model (informative: it may be absent) */
        char *path = NULL;
        if (skycmd_default_model_path(&path, err) == SKYCMD_OK) printf("default model: %s\n", path);
        else printf("default model: none (%s)\n", skycmd_error_message(err));
        skycmd_string_free(path);
    }
    if (argc > 1) {
        char *out = NULL;
        st = skycmd_inspect(argv[1], NULL, &out, err);
        if (st != SKYCMD_OK) {
            fprintf(stderr, "consumer: %s\n", skycmd_error_message(err));
            skycmd_error_free(err);
            return 1;
        }
        fputs(out, stdout);
        skycmd_string_free(out);
    }
    skycmd_error_free(err);
    return 0;
}
