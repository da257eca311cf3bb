/*
 * models.c - the model registry of `skycmd serve`.
 *
 * Contract: load_models() opens every --model once (shared read-only by all sessions),
 * names it (NAME=, else the model's own name) and refuses duplicate names; find_model()
 * maps a request's "model" to a slot (jev-latest/default = the first); free_models() frees
 * them after the workers' sessions are gone.
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "serve_internal.h"

int find_model(const char *name) {
    for (int i = 0; i < S.n_models; i++)
        if (strcmp(S.models[i].name, name) == 0) return i;
    /* Clients default to the hosted aliases; they mean "the default model" here. */
    if (strcmp(name, "jev-latest") == 0 || strcmp(name, "default") == 0) return 0;
    return -1;
}

void unknown_model(struct req *r, const char *name) {
    struct sbuf m = {0};
    sbuf_adds(&m, "model '");
    /* keep the echo short and printable */
    size_t n = strlen(name);
    sbuf_add(&m, name, n > 80 ? 80 : n);
    sbuf_adds(&m, n > 80 ? "...' is not loaded; available: " : "' is not loaded; available: ");
    for (int i = 0; i < S.n_models; i++) {
        if (i) sbuf_adds(&m, ", ");
        sbuf_adds(&m, S.models[i].name);
    }
    set_error(r, 422, m.p ? m.p : "model is not loaded");
    sbuf_free(&m);
}
int load_models(void) {
    const struct serve_config *cfg = S.cfg;
    skycmd_error *err = skycmd_error_new();
    skycmd_options *opts = skycmd_options_new();
    if (!err || !opts) {
        fprintf(stderr, "skycmd serve: out of memory\n");
        skycmd_error_free(err);
        skycmd_options_free(opts);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < cfg->n_models && rc == 0; i++) {
        skycmd_options_set_int(opts, SKYCMD_OPT_WEIGHTS, cfg->weights);
        if (cfg->max_tokens > 0) skycmd_options_set_int(opts, SKYCMD_OPT_MAX_TOKENS, cfg->max_tokens);
        skycmd_options_set_string(opts, SKYCMD_OPT_MODEL_NAME, cfg->models[i].name);
        if (cfg->verbose) skycmd_options_set_log(opts, lib_log, NULL);
        uint64_t t = now_us();
        int st = skycmd_model_open(cfg->models[i].path, opts, &S.models[i].model, err);
        if (st != SKYCMD_OK) {
            fprintf(stderr, "skycmd serve: cannot load model '%s': %s\n", cfg->models[i].path,
                    skycmd_error_message(err)[0] ? skycmd_error_message(err) : skycmd_strerror(st));
            rc = -1;
            break;
        }
        const char *nm = cfg->models[i].name ? cfg->models[i].name : skycmd_model_name(S.models[i].model);
        if (!nm || !*nm) nm = cfg->models[i].path;
        snprintf(S.models[i].name, sizeof S.models[i].name, "%s", nm);
        S.models[i].path = cfg->models[i].path;
        struct stat sb;
        struct tm tm;
        snprintf(S.models[i].date, sizeof S.models[i].date, "1970-01-01");
        if (stat(cfg->models[i].path, &sb) == 0 && gmtime_r(&sb.st_mtime, &tm))
            strftime(S.models[i].date, sizeof S.models[i].date, "%Y-%m-%d", &tm);
        for (int k = 0; k < i; k++)
            if (strcmp(S.models[k].name, S.models[i].name) == 0) {
                fprintf(stderr, "skycmd serve: two models are named '%s'; name them with --model NAME=PATH\n",
                        S.models[i].name);
                rc = -1;
            }
        S.n_models = i + 1;
        if (cfg->verbose)
            log_line("skycmd serve: loaded model '%s' from %s in %.1f ms", S.models[i].name,
                     cfg->models[i].path, (double)(now_us() - t) / 1000.0);
    }
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return rc;
}

void free_models(void) {
    for (int i = 0; i < S.n_models; i++) {
        skycmd_model_free(S.models[i].model);
        S.models[i].model = NULL;
    }
    S.n_models = 0;
}


#endif /* SKYCMD_HAVE_MHD */
