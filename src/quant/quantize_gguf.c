/*
 * quantize_gguf.c - `skycmd quantize`: re-type the tensors of a GGUF file under the type
 * policy (type_policy.c, which the converter shares), keeping every metadata key. Tensors whose type does not change are copied
 * byte for byte (a Q8_0 tensor is never re-quantized); others go through f32 and
 * sk_ggml_from_f32 (Q8_0: ggml's reference quantizer, byte-identical). See quant.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "int8_store.h"
#include "quant.h"

static int find_arch_u32(const sk_gguf *g, const char *suffix, uint32_t *out) {
    sk_str arch;
    if (sk_gguf_get_str(g, "general.architecture", &arch) != SKYCMD_OK || arch.len > 100)
        return -1;
    char key[200];
    snprintf(key, sizeof key, "%.*s.%s", (int)arch.len, arch.ptr, suffix);
    return sk_gguf_get_u32(g, key, out) == SKYCMD_OK ? 0 : -1;
}

uint32_t sk_quant_first_head_block(const sk_gguf *g) {
    uint32_t blocks, head;
    if (find_arch_u32(g, "block_count", &blocks) || find_arch_u32(g, "decision.block_count", &head) ||
        head > blocks)
        return UINT32_MAX;
    return blocks - head;
}

static int valid_type(uint32_t t) {
    return t == SK_GGML_F32 || t == SK_GGML_F16 || t == SK_GGML_BF16 || t == SK_GGML_Q8_0;
}

/* llama.cpp's general.file_type values (LLAMA_FTYPE_*). */
static uint32_t file_type(uint32_t t) {
    switch (t) {
    case SK_GGML_F16: return 1;
    case SK_GGML_Q8_0: return 7;
    case SK_GGML_BF16: return 32;
    default: return 0;
    }
}

typedef struct q_progress {
    const sk_quantize_opts *o;
    uint64_t done, total;
    int cancelled;
} q_progress;

/* Build the writer: every key copied (general.file_type rewritten) and every tensor
 * re-typed into owned buffers. Progress covers the conversion (source bytes); the write
 * itself is quick next to it and reports nothing more. */
static int build(const sk_gguf *g, const sk_quantize_opts *o, sk_gguf_writer **out, sk_err *e) {
    *out = NULL;
    if (!valid_type(o->type) || !valid_type(o->head_type))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "quantize: unsupported target type "
                       "(use F32, F16, BF16 or Q8_0)");
    sk_gguf_writer *w = sk_gguf_writer_new((uint32_t)sk_gguf_alignment(g));
    if (!w) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    int rc = SKYCMD_OK, have_ft = 0;
    for (size_t i = 0; i < sk_gguf_n_kv(g) && !rc; i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        if (sk_int8_store_is_key(k)) continue;
        if (sk_str_eq(k, "general.file_type")) {  /* rewritten in its place */
            rc = sk_gguf_writer_add_u32(w, "general.file_type", file_type(o->type));
            have_ft = 1;
        } else {
            rc = sk_gguf_writer_add_value(w, k, sk_gguf_kv_value(g, i));
        }
        if (rc) rc = sk_fail(e, rc, "cannot copy metadata key %.*s", (int)(k.len > 200 ? 200 : k.len),
                             k.ptr);
    }
    if (!rc && !have_ft) {
        rc = sk_gguf_writer_add_u32(w, "general.file_type", file_type(o->type));
        if (rc) rc = sk_fail(e, rc, "cannot write general.file_type");
    }
    if (!rc && o->over && o->over->keys) rc = o->over->keys(o->over->ud, w, e);
    const uint32_t first_head = sk_quant_first_head_block(g);
    q_progress pr = {o, 0, 0, 0};
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) pr.total += sk_gguf_tensor_at(g, i)->nbytes;
    float *f = NULL;
    size_t f_cap = 0;
    for (size_t i = 0; i < sk_gguf_n_tensors(g) && !rc; i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        char name[256];
        if (t->name.len >= sizeof name) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %zu: name longer than 255 bytes", i);
            break;
        }
        memcpy(name, t->name.ptr, (size_t)t->name.len);
        name[t->name.len] = '\0';
        if (!sk_ggml_type_known(t->type) || !t->data) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %s: type %u cannot be re-typed", name,
                         (unsigned)t->type);
            break;
        }
        uint32_t ty = sk_quant_policy(name, sk_quant_is_head(name, first_head), t->n_dims,
                                      t->ne[0], o->type, o->head_type);
        const void *own = NULL;
        uint64_t own_bytes = 0;
        if (o->over && o->over->tensor) {
            const int r = o->over->tensor(o->over->ud, t, name, &ty, &own, &own_bytes, e);
            if (r < 0) {
                rc = -r;
                break;
            }
            if (r == 0) own = NULL;
        }
        /* Every tensor is read as f32 once, also when its type is kept: weights that are
         * NaN or infinite are refused here rather than written into a model that cannot
         * answer. */
        size_t n = (size_t)t->n_elements;
        if ((uint64_t)n != t->n_elements || n == 0) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: bad element count", name);
            break;
        }
        if (n > f_cap) {
            free(f);
            f = sk_malloc_array(n, sizeof(float));
            f_cap = f ? n : 0;
            if (!f) {
                rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory converting tensor %s", name);
                break;
            }
        }
        const int readable = sk_ggml_to_f32(t->type, t->data, f, n) == 0;
        if (!readable && ty != t->type) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: cannot convert %s to %s", name,
                         sk_ggml_type_name(t->type), sk_ggml_type_name(ty));
            break;
        }
        size_t bad = readable ? sk_first_nonfinite(f, n) : n; /* (kept types: copied as is) */
        if (bad < n) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: element %zu is %s; a model with "
                         "non-finite weights cannot answer", name, bad,
                         isnan(f[bad]) ? "NaN" : "infinite");
            break;
        }
        if (own) {
            rc = sk_gguf_writer_add_tensor(w, name, t->n_dims, t->ne, ty, own, own_bytes, 0, e);
        } else if (ty == t->type) {
            rc = sk_gguf_writer_add_tensor(w, name, t->n_dims, t->ne, ty, t->data, t->nbytes, 0, e);
        } else {
            uint64_t nb = sk_ggml_row_size(ty, n);
            void *dst = nb ? malloc((size_t)nb) : NULL;
            if (!dst) {
                rc = sk_fail(e, nb ? SKYCMD_E_NOMEM : SKYCMD_E_INTERNAL,
                             "tensor %s: cannot size %s data", name, sk_ggml_type_name(ty));
                break;
            }
            if (sk_ggml_from_f32(ty, f, dst, n)) {
                free(dst);
                rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: cannot convert %s to %s", name,
                             sk_ggml_type_name(t->type), sk_ggml_type_name(ty));
                break;
            }
            rc = sk_gguf_writer_add_tensor(w, name, t->n_dims, t->ne, ty, dst, nb, 1, e);
            free(dst);
        }
        pr.done += t->nbytes;
        if (!rc && o->progress && o->progress(o->progress_ud, pr.done, pr.total))
            rc = sk_fail(e, SKYCMD_E_CANCELLED, "quantize: cancelled");
    }
    free(f);
    if (rc) {
        sk_gguf_writer_free(w);
        return rc;
    }
    *out = w;
    return SKYCMD_OK;
}

int sk_quantize_gguf(const sk_gguf *g, const sk_quantize_opts *o, const char *out_path,
                     sk_err *e) {
    sk_gguf_writer *w;
    int rc = build(g, o, &w, e);
    if (rc) return rc;
    rc = sk_gguf_writer_write(w, out_path, NULL, NULL, e);
    sk_gguf_writer_free(w);
    return rc;
}

int sk_quantize_gguf_mem(const sk_gguf *g, const sk_quantize_opts *o, uint8_t **out,
                         size_t *size, sk_err *e) {
    sk_gguf_writer *w;
    int rc = build(g, o, &w, e);
    if (rc) return rc;
    rc = sk_gguf_writer_write_mem(w, out, size, e);
    sk_gguf_writer_free(w);
    return rc;
}
