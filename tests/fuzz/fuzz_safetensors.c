/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors reader and the Laya config
 * parsers (all outside input of `skycmd convert`).
 *
 * Input: a safetensors file, opened from a buffer of exactly its size (ASan catches any read
 * past the end). If the reader accepts it, every supported tensor (up to a size cap) is
 * widened to f32 and the last byte of every tensor is touched; the accepted file is copied
 * through the writer and must be accepted again with the same tensors. Inputs starting with
 * "R:" or "E:" go to the rl_agent_config.json / encoder/config.json parsers instead. Seeds:
 * corpus/safetensors/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/laya.h"
#include "safetensors/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sk_err e = {0};
    if (size >= 2 && (data[0] == 'R' || data[0] == 'E') && data[1] == ':') {
        sk_laya_config c;
        memset(&c, 0, sizeof c);
        if (data[0] == 'R')
            sk_laya_parse_rl_config((const char *)data + 2, size - 2, "rl", &c, &e);
        else
            sk_laya_parse_enc_config((const char *)data + 2, size - 2, "enc", &c, &e);
        return 0;
    }
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    sk_safetensors *st = NULL;
    if (sk_st_open_buffer(copy, size, "fuzz", &st, &e) != SKYCMD_OK) {
        free(copy);
        return 0;
    }
    size_t n = sk_st_n_tensors(st);
    sk_st_writer *w = sk_st_writer_new();
    int ok = w != NULL;
    for (size_t i = 0; i < n; i++) {
        const sk_st_tensor *t = sk_st_tensor_at(st, i);
        if (t->nbytes) {
            volatile uint8_t last = t->data[t->nbytes - 1];
            (void)last;
        }
        if (t->supported && t->n_elements <= (1u << 20)) {
            float *f = malloc(t->n_elements * sizeof *f + 4);
            if (f) {
                if (sk_st_to_f32(t, f, &e) != SKYCMD_OK) __builtin_trap();
                free(f);
            }
        }
        if (ok && t->supported &&
            sk_st_writer_add(w, t->name, t->ggml_type, t->n_dims, t->shape, t->data, t->nbytes,
                             &e) != SKYCMD_OK)
            ok = 0; /* e.g. names the writer refuses; not a reader bug */
    }
    if (ok) {
        uint8_t *out = NULL;
        size_t on = 0;
        if (sk_st_writer_write_mem(w, &out, &on, &e) == SKYCMD_OK) {
            sk_safetensors *st2 = NULL;
            if (sk_st_open_buffer(out, on, "again", &st2, &e) != SKYCMD_OK) __builtin_trap();
            size_t supported = 0;
            for (size_t i = 0; i < n; i++) supported += sk_st_tensor_at(st, i)->supported != 0;
            if (sk_st_n_tensors(st2) != supported) __builtin_trap();
            for (size_t i = 0; i < sk_st_n_tensors(st2); i++) {
                const sk_st_tensor *b = sk_st_tensor_at(st2, i);
                const sk_st_tensor *a = sk_st_find(st, b->name);
                if (!a || a->nbytes != b->nbytes || a->n_dims != b->n_dims ||
                    (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0))
                    __builtin_trap();
            }
            sk_st_close(st2);
            free(out);
        }
    }
    sk_st_writer_free(w);
    sk_st_close(st);
    free(copy);
    return 0;
}
