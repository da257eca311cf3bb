/*
 * fuzz_gguf.c - libFuzzer target for the GGUF reader, the inspect formatter and the writer.
 *
 * For every input: open it from a buffer of exactly its size (ASan catches any read past
 * the end); if the reader accepts it, walk every value and array element, touch the last
 * byte of every tensor, describe it as text and JSON, and copy it through the writer. A
 * file the reader accepted, copied key by key and tensor by tensor, must be accepted again
 * with the same counts; anything else is a bug and traps. Seeds: corpus/gguf/ (valid files
 * and the damaged corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static void walk(const sk_gguf_value *v, int depth) {
    if (v->type != SK_GGUF_ARRAY || depth > 16) return;
    sk_gguf_iter it;
    sk_gguf_value el;
    sk_gguf_iter_init(&it, v);
    uint64_t n = 0;
    while (sk_gguf_iter_next(&it, &el)) {
        if (el.type == SK_GGUF_STRING && el.v.s.len) {
            volatile char c = el.v.s.ptr[el.v.s.len - 1];
            (void)c;
        }
        walk(&el, depth + 1);
        n++;
    }
    if (n != v->v.arr.count || it.p != v->v.arr.end) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    sk_err e = {0};
    sk_gguf *g = NULL;
    int st = sk_gguf_open_buffer(copy, size, &g, &e);
    if (st != SKYCMD_OK) {
        if (st != SKYCMD_E_FORMAT || e.msg[0] == '\0') __builtin_trap();
        free(copy);
        return 0;
    }
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) walk(sk_gguf_kv_value(g, i), 0);
    int copyable = 1;
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        if (t->data && t->nbytes) {
            volatile uint8_t b = t->data[t->nbytes - 1];
            (void)b;
        }
        if (!sk_ggml_type_known(t->type) || t->name.len >= 64) copyable = 0;
    }
    char *out = NULL;
    if (sk_gguf_describe(g, "fuzz", 4, 0, &out, &e) == SKYCMD_OK) free(out);
    if (sk_gguf_describe(g, "fuzz", 4, 1, &out, &e) == SKYCMD_OK) free(out);

    if (copyable && size < (1u << 20)) {
        sk_gguf_writer *w = sk_gguf_writer_new(0);
        int ok = w != NULL;
        for (size_t i = 0; ok && i < sk_gguf_n_kv(g); i++)
            ok = sk_gguf_writer_add_value(w, sk_gguf_kv_key(g, i), sk_gguf_kv_value(g, i)) == 0;
        char name[64];
        for (size_t i = 0; ok && i < sk_gguf_n_tensors(g); i++) {
            const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
            memcpy(name, t->name.ptr, (size_t)t->name.len);
            name[t->name.len] = '\0';
            if (strlen(name) != t->name.len) { ok = 0; break; } /* embedded NUL: not C-nameable */
            ok = sk_gguf_writer_add_tensor(w, name, t->n_dims, t->ne, t->type, t->data,
                                           t->nbytes, 0, &e) == 0;
            if (!ok) __builtin_trap();
        }
        uint8_t *mem = NULL;
        size_t n = 0;
        if (ok && sk_gguf_writer_write_mem(w, &mem, &n, &e) == 0) {
            sk_gguf *h = NULL;
            if (sk_gguf_open_buffer(mem, n, &h, &e) != 0) __builtin_trap();
            int had = sk_gguf_find_key(g, "general.alignment") >= 0;
            if (sk_gguf_n_kv(h) != sk_gguf_n_kv(g) + (had ? 0 : 1) ||
                sk_gguf_n_tensors(h) != sk_gguf_n_tensors(g))
                __builtin_trap();
            sk_gguf_close(h);
            free(mem);
        }
        sk_gguf_writer_free(w);
    }
    sk_gguf_close(g);
    free(copy);
    return 0;
}
