/*
 * models.c - the model registry of `skycmd serve`: loading, lookup, reload.
 *
 * Contract: load_models() opens every --model once (shared read-only by all sessions),
 * names it (NAME=, else the model's own name) and refuses duplicate names. Both it and
 * reload_models() run on server.c's loader thread; each open logs its start and end (and
 * the library's progress at most once a second) and stops with SKYCMD_E_CANCELLED once
 * S.load_cancel is set (the library asks its progress callback while it reads the file,
 * between tensors and before every layer of the int8 calibration's passes).
 * reload_models() (SIGHUP) opens every file again into new handles while the old ones keep
 * serving, then switches S.current to the new set in one step; a file that fails to open
 * keeps its old model (and the reason is logged); a reload cancelled because the server is
 * stopping switches nothing (the models loaded before serve to the end of the drain and are
 * freed with the rest). Workers hold the set their sessions were
 * made from and move to the new one before their next batch (workers_wake() rouses idle
 * ones), so an old model is freed when the last request that used it is answered.
 * find_model() maps a request's "model" to a slot of a set (jev-latest/default = the first).
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

int find_model(const struct model_set *set, const char *name) {
    for (int i = 0; i < set->n; i++)
        if (strcmp(set->m[i]->name, name) == 0) return i;
    /* Clients default to the hosted aliases; they mean "the default model" here. */
    if (strcmp(name, "jev-latest") == 0 || strcmp(name, "default") == 0) return 0;
    return -1;
}

void unknown_model(struct req *r, const struct model_set *set, const char *name) {
    struct sbuf m = {0};
    sbuf_adds(&m, "model '");
    /* keep the echo short and printable */
    size_t n = strlen(name);
    sbuf_add(&m, name, n > 80 ? 80 : n);
    sbuf_adds(&m, n > 80 ? "...' is not loaded; available: " : "' is not loaded; available: ");
    for (int i = 0; i < set->n; i++) {
        if (i) sbuf_adds(&m, ", ");
        sbuf_adds(&m, set->m[i]->name);
    }
    set_error(r, 422, m.p ? m.p : "model is not loaded");
    sbuf_free(&m);
}

static void model_unref(struct loaded_model *lm) {
    if (!lm || atomic_fetch_sub(&lm->refs, 1) != 1) return;
    if (!atomic_load(&S.draining)) /* replaced by a reload, and its last request answered */
        log_line("skycmd serve: released model '%s' of generation %llu", lm->name,
                 (unsigned long long)lm->generation);
    int st = skycmd_model_free(lm->model);
    if (st != SKYCMD_OK) log_line("skycmd serve: [warning] freeing model '%s': %s", lm->name, skycmd_strerror(st));
    free(lm);
}

/* The library's progress report of a load: cancels it when the server is stopping (the
 * library then returns SKYCMD_E_CANCELLED within milliseconds), and logs how far it is
 * every 10 s ("still loading model 1 of 2 (PATH), 40 s: 37%"; done/total is the library's
 * estimate of the load's time, include/skycmd.h). */
struct load_progress {
    int index;
    uint64_t start_us, last_us;
};

static int on_load_progress(void *ud, uint64_t done, uint64_t total) {
    struct load_progress *p = ud;
    if (atomic_load(&S.load_cancel)) return 1;
    uint64_t now = now_us();
    if (total && now - p->last_us >= 10u * 1000000u) {
        p->last_us = now;
        log_line("skycmd serve: still loading model %d of %d (%s), %.0f s: %.0f%%", p->index + 1,
                 S.cfg->n_models, S.cfg->models[p->index].path, (double)(now - p->start_us) / 1e6,
                 100.0 * (double)done / (double)total);
    }
    return 0;
}

/* Open spec i into a new loaded_model; NULL with *why filled on failure. */
static struct loaded_model *open_one(int i, uint64_t generation, char *why, size_t why_cap) {
    const struct serve_config *cfg = S.cfg;
    skycmd_error *err = skycmd_error_new();
    skycmd_options *opts = skycmd_options_new();
    struct loaded_model *lm = calloc(1, sizeof *lm);
    if (!err || !opts || !lm) {
        snprintf(why, why_cap, "out of memory");
        goto fail;
    }
    atomic_store(&S.loading, i);
    uint64_t t = now_us();
    struct load_progress progress = {i, t, t};
    skycmd_options_set_int(opts, SKYCMD_OPT_WEIGHTS, cfg->weights);
    /* (a row-scaled model then makes its single-pass choice in the load, with progress) */
    if (cfg->activations >= 0) skycmd_options_set_int(opts, SKYCMD_OPT_ACTIVATIONS, cfg->activations);
    if (cfg->max_tokens > 0) skycmd_options_set_int(opts, SKYCMD_OPT_MAX_TOKENS, cfg->max_tokens);
    skycmd_options_set_string(opts, SKYCMD_OPT_MODEL_NAME, cfg->models[i].name);
    skycmd_options_set_progress(opts, on_load_progress, &progress);
    if (cfg->verbose) skycmd_options_set_log(opts, lib_log, NULL);
    log_line("skycmd serve: loading model %d of %d from %s", i + 1, cfg->n_models, cfg->models[i].path);
    int st = atomic_load(&S.load_cancel) ? SKYCMD_E_CANCELLED
                                         : skycmd_model_open(cfg->models[i].path, opts, &lm->model, err);
    if (st != SKYCMD_OK) {
        snprintf(why, why_cap, "%s", skycmd_error_message(err)[0] ? skycmd_error_message(err) : skycmd_strerror(st));
        goto fail;
    }
    const char *nm = cfg->models[i].name ? cfg->models[i].name : skycmd_model_name(lm->model);
    if (!nm || !*nm) nm = cfg->models[i].path;
    snprintf(lm->name, sizeof lm->name, "%s", nm);
    lm->path = cfg->models[i].path;
    lm->generation = generation;
    atomic_init(&lm->refs, 1);
    struct stat sb;
    struct tm tm;
    snprintf(lm->date, sizeof lm->date, "1970-01-01");
    if (stat(cfg->models[i].path, &sb) == 0 && gmtime_r(&sb.st_mtime, &tm))
        strftime(lm->date, sizeof lm->date, "%Y-%m-%d", &tm);
    log_line("skycmd serve: loaded model %d of %d ('%s') in %.1f ms", i + 1, cfg->n_models, lm->name,
             (double)(now_us() - t) / 1000.0);
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return lm;
fail:
    if (lm) skycmd_model_free(lm->model);
    free(lm);
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return NULL;
}

static const char *duplicate_name(const struct model_set *set) {
    for (int i = 0; i < set->n; i++)
        for (int k = 0; k < i; k++)
            if (strcmp(set->m[k]->name, set->m[i]->name) == 0) return set->m[i]->name;
    return NULL;
}

static void set_free(struct model_set *set) {
    for (int i = 0; i < set->n; i++) model_unref(set->m[i]);
    free(set);
}

int load_models(void) {
    struct model_set *set = calloc(1, sizeof *set);
    if (!set) {
        log_line("skycmd serve: out of memory");
        return -1;
    }
    set->refs = 1;
    set->generation = 1;
    for (int i = 0; i < S.cfg->n_models; i++) {
        char why[1024];
        set->m[i] = open_one(i, 1, why, sizeof why);
        if (!set->m[i]) {
            log_line("skycmd serve: cannot load model '%s': %s", S.cfg->models[i].path, why);
            set_free(set);
            return -1;
        }
        set->n = i + 1;
    }
    const char *dup = duplicate_name(set);
    if (dup) {
        log_line("skycmd serve: two models are named '%s'; name them with --model NAME=PATH", dup);
        set_free(set);
        return -1;
    }
    pthread_mutex_lock(&S.setmu);
    S.current = set;
    atomic_store(&S.generation, 1);
    pthread_mutex_unlock(&S.setmu);
    return 0;
}

int reload_models(void) {
    struct model_set *old = models_acquire();
    if (!old) return S.cfg->n_models;
    struct model_set *set = calloc(1, sizeof *set);
    if (!set) {
        log_line("skycmd serve: SIGHUP: out of memory; keeping the models loaded");
        models_release(old);
        return S.cfg->n_models;
    }
    uint64_t t = now_us();
    set->refs = 1;
    set->generation = old->generation + 1;
    int failed = 0;
    for (int i = 0; i < S.cfg->n_models; i++) {
        char why[1024];
        set->m[i] = open_one(i, set->generation, why, sizeof why);
        if (!set->m[i] && atomic_load(&S.load_cancel)) {
            /* the server is stopping: what was reloaded so far goes, nothing is switched */
            log_line("skycmd serve: SIGHUP: reload cancelled while loading '%s' (%s); keeping the models "
                     "loaded before", S.cfg->models[i].path, why);
            set->n = i;
            set_free(set);
            models_release(old);
            return S.cfg->n_models;
        }
        if (!set->m[i]) {
            failed++;
            log_line("skycmd serve: SIGHUP: cannot reload '%s': %s; keeping the model loaded before ('%s')",
                     S.cfg->models[i].path, why, old->m[i]->name);
            set->m[i] = old->m[i];
            atomic_fetch_add(&old->m[i]->refs, 1);
        }
        set->n = i + 1;
    }
    const char *dup = duplicate_name(set);
    if (dup) {
        log_line("skycmd serve: SIGHUP: two models would be named '%s'; keeping the models loaded before", dup);
        set_free(set);
        models_release(old);
        return S.cfg->n_models;
    }
    pthread_mutex_lock(&S.setmu);
    struct model_set *prev = S.current;
    S.current = set;
    atomic_store(&S.generation, set->generation);
    pthread_mutex_unlock(&S.setmu);
    log_line("skycmd serve: SIGHUP: generation %llu serves %d model%s (%d reloaded, %d kept) after %.1f ms",
             (unsigned long long)set->generation, set->n, set->n == 1 ? "" : "s", set->n - failed, failed,
             (double)(now_us() - t) / 1000.0);
    models_release(prev); /* S.current's reference */
    models_release(old);  /* ours */
    workers_wake();
    return failed;
}

struct model_set *models_acquire(void) {
    pthread_mutex_lock(&S.setmu);
    struct model_set *set = S.current;
    if (set) set->refs++;
    pthread_mutex_unlock(&S.setmu);
    return set;
}

void models_release(struct model_set *set) {
    if (!set) return;
    pthread_mutex_lock(&S.setmu);
    int last = --set->refs == 0;
    pthread_mutex_unlock(&S.setmu);
    if (last) set_free(set);
}

void free_models(void) {
    pthread_mutex_lock(&S.setmu);
    struct model_set *set = S.current;
    S.current = NULL;
    pthread_mutex_unlock(&S.setmu);
    models_release(set);
}

#endif /* SKYCMD_HAVE_MHD */
