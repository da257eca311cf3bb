/*
 * convert.c - the public skycmd_convert() and skycmd_random_model(): option handling around
 * the Laya reader/converter (src/convert/laya.h) and the random model generator
 * (src/convert/random_model.h). Both write atomically: a failure leaves no output.
 */
#include <string.h>

#include "../convert/laya.h"
#include "../convert/random_model.h"
#include "../gguf/gguf.h"
#include "api.h"

int sk_api_convert_opts(const skycmd_options *opts, sk_convert_opts *o, skycmd_error *err) {
    memset(o, 0, sizeof *o);
    o->type = (uint32_t)sk_opt_int(opts, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F16);
    o->head_type = (uint32_t)sk_opt_int(opts, SKYCMD_OPT_HEAD_TYPE, SKYCMD_TYPE_F32);
    o->name = sk_opt_str(opts, SKYCMD_OPT_NAME, NULL);
    o->pre = sk_opt_str(opts, SKYCMD_OPT_PRE, NULL);
    if (opts) {
        o->progress = opts->progress;
        o->progress_ud = opts->progress_ud;
    }
    if (o->name && !o->name[0]) return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "empty --name");
    if (o->pre && !o->pre[0]) return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "empty --pre");
    /* GGUF strings are UTF-8 (general.name, tokenizer.ggml.pre) */
    if (o->name && !sk_utf8_valid(o->name, strlen(o->name)))
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "--name is not valid UTF-8");
    if (o->pre && !sk_utf8_valid(o->pre, strlen(o->pre)))
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "--pre is not valid UTF-8");
    return SKYCMD_OK;
}

int skycmd_convert(const char *laya_dir, const char *out_path, const skycmd_options *opts,
                   skycmd_error *err) {
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "invalid options handle");
    if (!laya_dir || !out_path || !laya_dir[0] || !out_path[0])
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "convert: a checkpoint directory and an output path are required");
    sk_convert_opts o;
    int s = sk_api_convert_opts(opts, &o, err);
    if (s) return s;
    sk_err e = {0};
    sk_laya *l = NULL;
    s = sk_laya_open_dir(laya_dir, &l, &e);
    if (!s) {
        sk_opt_log(opts, 1, "converting %s: %u encoder + %u head blocks, hidden %u, vocab %u",
                   laya_dir, l->cfg.n_layers, l->cfg.head_layers, l->cfg.hidden,
                   l->cfg.vocab_size);
        s = sk_laya_to_gguf(l, &o, out_path, &e);
    }
    sk_laya_free(l);
    return sk_api_report(err, &e, s);
}

int skycmd_random_model(const char *preset, const char *out_path, const skycmd_options *opts,
                        skycmd_error *err) {
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "invalid options handle");
    if (!preset || !out_path || !out_path[0])
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "random: a preset and an output path are required");
    sk_convert_opts o;
    int s = sk_api_convert_opts(opts, &o, err);
    if (s) return s;
    uint64_t seed = (uint64_t)sk_opt_int(opts, SKYCMD_OPT_SEED, 42);
    int64_t massive = sk_opt_int(opts, SKYCMD_OPT_MASSIVE, 0);
    int64_t layout = sk_opt_int(opts, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_GGUF);
    if (layout != SKYCMD_LAYOUT_GGUF && layout != SKYCMD_LAYOUT_LAYA)
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "random: unknown layout %lld",
                           (long long)layout);
    /* The GGUF is named after the preset unless --name says otherwise, so that a Laya
     * directory named like the preset converts to the very same bytes. */
    int xt = 0;
    const sk_random_preset *p = sk_random_find_preset(preset, &xt);
    if (!o.name && p) o.name = preset;
    sk_err e = {0};
    sk_random_ckpt ck;
    s = sk_random_build(preset, seed, (uint32_t)(massive < 0 ? 0 : massive), &ck, &e);
    if (s) return sk_api_report(err, &e, s);
    sk_opt_log(opts, 1, "random %s (seed %llu): %llu parameters", preset,
               (unsigned long long)seed, (unsigned long long)ck.n_params);
    if (layout == SKYCMD_LAYOUT_LAYA) {
        s = sk_random_write_dir(&ck, out_path, &e);
    } else {
        sk_laya *l = NULL;
        s = sk_random_open(&ck, &l, &e);
        if (!s) s = sk_laya_to_gguf(l, &o, out_path, &e);
        sk_laya_free(l);
    }
    sk_random_free(&ck);
    return sk_api_report(err, &e, s);
}
