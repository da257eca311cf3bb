/* main.c - `skycmd`: dispatch to subcommands; --version, --help and `help <command>`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} k_cmds[] = {
    {"inspect", cmd_inspect, "print a GGUF file's metadata and tensors"},
    {"convert", cmd_convert, "convert a Laya checkpoint directory (or a random model) to GGUF"},
    {"random", cmd_random, "write a random model as GGUF or as a Laya checkpoint directory"},
    {"quantize", cmd_quantize, "re-type the tensors of a GGUF file (q8_0, f16, bf16, f32)"},
    {"decide", cmd_decide, "answer a /v1/systemone request with a model"},
    {"tokenize", cmd_tokenize, "show the token ids of a text"},
    {"bench", cmd_bench, "measure load time, latency and throughput"},
    {"serve", cmd_serve, "serve POST /v1/systemone over HTTP"},
    {"calibrate", cmd_calibrate, "refit a model's temperatures on labelled data (laya.calibrate)"},
};
#define N_CMDS (sizeof k_cmds / sizeof k_cmds[0])

static void usage(FILE *out) {
    fprintf(out, "usage: skycmd <command> [options]\n"
                 "       skycmd --version | --help | help <command>\n\ncommands:\n");
    for (size_t i = 0; i < N_CMDS; i++) fprintf(out, "  %-10s %s\n", k_cmds[i].name, k_cmds[i].summary);
    fprintf(out, "\noptions:\n"
                 "  -V, --version  print the library version, ABI version, build and CPU features\n"
                 "  -h, --help     show this help\n"
                 "\nRun 'skycmd <command> --help' for the options of a command.\n"
                 "exit status: 0 success, 1 error (message on stderr), 2 usage error\n");
}

static int find_cmd(const char *name) {
    for (size_t i = 0; i < N_CMDS; i++)
        if (strcmp(name, k_cmds[i].name) == 0) return (int)i;
    const char *near = cli_nearest(name, &k_cmds[0].name, N_CMDS, sizeof k_cmds[0]);
    if (near) fprintf(stderr, "skycmd: unknown command '%s' (did you mean '%s'?)\n", name, near);
    else fprintf(stderr, "skycmd: unknown command '%s'\n", name);
    fprintf(stderr, "try 'skycmd --help' for the commands\n");
    return -1;
}

static void version(void) {
    printf("skycmd %s (library %s, ABI %u)\n", SKYCMD_VERSION_STRING, skycmd_version_string(),
           skycmd_abi_version());
    printf("build: %s\n", skycmd_build_id());
    printf("cpu features: %s\n", skycmd_cpu_features());
    printf("kernels: %s\n", skycmd_kernels());
    printf("%s\n", serve_http_library());
}

int main(int argc, char **argv) {
    cli_guard_std_fds();
    skycmd_error *err = skycmd_error_new();
    int st = skycmd_check_version(SKYCMD_VERSION_NUMBER, err);
    if (st != SKYCMD_OK) {
        fprintf(stderr, "skycmd: %s\n", skycmd_error_message(err));
        skycmd_error_free(err);
        return 1;
    }
    skycmd_error_free(err);
    if (argc < 2) {
        fprintf(stderr, "skycmd: missing command\ntry 'skycmd --help' for the commands\n");
        return 2;
    }
    const char *a = argv[1];
    int is_help = cli_is_help(a) || strcmp(a, "help") == 0;
    int is_version = strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0 || strcmp(a, "version") == 0;
    if (strcmp(a, "help") == 0 && argc == 3) { /* help <command> = <command> --help */
        int k = find_cmd(argv[2]);
        if (k < 0) return 2;
        char *sub[] = {argv[2], "--help", NULL};
        return k_cmds[k].fn(2, sub);
    }
    if (strcmp(a, "help") == 0 && argc > 3) {
        fprintf(stderr, "skycmd: unexpected argument '%s' after help %s\ntry 'skycmd --help'\n",
                argv[3], argv[2]);
        return 2;
    }
    if ((is_help || is_version) && argc > 2) {
        fprintf(stderr, "skycmd: unexpected argument '%s' after %s\ntry 'skycmd --help'\n", argv[2], a);
        return 2;
    }
    if (is_help) {
        usage(stdout);
        return 0;
    }
    if (is_version) {
        version();
        return 0;
    }
    int k = find_cmd(a);
    return k < 0 ? 2 : k_cmds[k].fn(argc - 1, argv + 1);
}
