/*
 * gguf_write.c - the GGUF version 3 writer.
 *
 * Contract: metadata values are encoded into one buffer as they are added (keys are
 * copied, duplicates refused); tensors are described up front and their data borrowed or
 * copied. At write time the writer appends general.alignment (u32) unless the caller added
 * it (then the caller's value, which must be a power of two, is the alignment used),
 * computes every tensor offset in one pass with each tensor padded to the alignment, and
 * streams header, metadata, tensor table and data to a temporary file that is renamed into
 * place only when everything succeeded (sk_atomic_*): no partial output. Q8_0 tensors whose
 * rows are not a multiple of 32 and tensors whose byte size disagrees with their dims and
 * type are refused when added. Names longer than 63 bytes are refused because ggml cannot
 * load them (GGML_MAX_NAME is 64 including the NUL).
 */
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

#define SK_GGML_MAX_NAME 64

typedef struct wkey {
    char *key;
    size_t len;
} wkey;

typedef struct wtensor {
    char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
    const uint8_t *data;
    uint8_t *owned;
    uint64_t nbytes;
} wtensor;

struct sk_gguf_writer {
    uint32_t alignment;
    int has_alignment_key;
    sk_buf kv;          /* encoded key/value pairs */
    wkey *keys;
    size_t n_keys, cap_keys;
    wtensor *tensors;
    size_t n_tensors, cap_tensors;
    int failed;         /* an allocation failed while adding: writing is refused */
};

static void put32(sk_buf *b, uint32_t v) {
    uint8_t p[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    sk_buf_append(b, p, 4);
}
static void put64(sk_buf *b, uint64_t v) {
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}
static void put_str(sk_buf *b, const char *s, size_t n) {
    put64(b, n);
    sk_buf_append(b, s, n);
}

sk_gguf_writer *sk_gguf_writer_new(uint32_t alignment) {
    if (alignment == 0) alignment = SK_GGUF_DEFAULT_ALIGNMENT;
    if (alignment & (alignment - 1)) return NULL;
    sk_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->alignment = alignment;
    sk_buf_init(&w->kv);
    return w;
}

void sk_gguf_writer_free(sk_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_keys; i++) free(w->keys[i].key);
    free(w->keys);
    for (size_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].owned);
    }
    free(w->tensors);
    sk_buf_free(&w->kv);
    free(w);
}

/* Register a key (refusing duplicates) and encode it with its type tag. */
static int begin_key(sk_gguf_writer *w, const char *key, size_t klen, uint32_t type) {
    if (!w || !key || klen == 0) return SKYCMD_E_INVALID_ARGUMENT;
    for (size_t i = 0; i < w->n_keys; i++)
        if (w->keys[i].len == klen && memcmp(w->keys[i].key, key, klen) == 0)
            return SKYCMD_E_INVALID_ARGUMENT;
    if (w->n_keys == w->cap_keys) {
        size_t nc = w->cap_keys ? w->cap_keys * 2 : 16;
        wkey *nk = sk_malloc_array(nc, sizeof *nk);
        if (!nk) { w->failed = 1; return SKYCMD_E_NOMEM; }
        if (w->n_keys) memcpy(nk, w->keys, w->n_keys * sizeof *nk);
        free(w->keys);
        w->keys = nk;
        w->cap_keys = nc;
    }
    char *k = sk_strndup(key, klen);
    if (!k) { w->failed = 1; return SKYCMD_E_NOMEM; }
    w->keys[w->n_keys].key = k;
    w->keys[w->n_keys].len = klen;
    w->n_keys++;
    put_str(&w->kv, key, klen);
    put32(&w->kv, type);
    return SKYCMD_OK;
}

static int end_key(sk_gguf_writer *w) {
    if (w->kv.failed) { w->failed = 1; return SKYCMD_E_NOMEM; }
    return SKYCMD_OK;
}

static int is_alignment_key(const char *key, size_t klen) {
    return klen == 17 && memcmp(key, "general.alignment", 17) == 0;
}

int sk_gguf_writer_add_u32(sk_gguf_writer *w, const char *key, uint32_t v) {
    if (key && is_alignment_key(key, strlen(key))) {
        if (v == 0 || (v & (v - 1))) return SKYCMD_E_INVALID_ARGUMENT;
    }
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_U32);
    if (st) return st;
    if (is_alignment_key(key, strlen(key))) {
        w->has_alignment_key = 1;
        w->alignment = v;
    }
    put32(&w->kv, v);
    return end_key(w);
}

int sk_gguf_writer_add_i32(sk_gguf_writer *w, const char *key, int32_t v) {
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_I32);
    if (st) return st;
    put32(&w->kv, (uint32_t)v);
    return end_key(w);
}

int sk_gguf_writer_add_u64(sk_gguf_writer *w, const char *key, uint64_t v) {
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_U64);
    if (st) return st;
    put64(&w->kv, v);
    return end_key(w);
}

int sk_gguf_writer_add_f32(sk_gguf_writer *w, const char *key, float v) {
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_F32);
    if (st) return st;
    uint32_t u;
    memcpy(&u, &v, 4);
    put32(&w->kv, u);
    return end_key(w);
}

int sk_gguf_writer_add_bool(sk_gguf_writer *w, const char *key, int v) {
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_BOOL);
    if (st) return st;
    sk_buf_putc(&w->kv, v ? 1 : 0);
    return end_key(w);
}

int sk_gguf_writer_add_str_n(sk_gguf_writer *w, const char *key, const char *v, size_t n) {
    if (!v && n) return SKYCMD_E_INVALID_ARGUMENT;
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_STRING);
    if (st) return st;
    put_str(&w->kv, v ? v : "", n);
    return end_key(w);
}

int sk_gguf_writer_add_str(sk_gguf_writer *w, const char *key, const char *v) {
    if (!v) return SKYCMD_E_INVALID_ARGUMENT;
    return sk_gguf_writer_add_str_n(w, key, v, strlen(v));
}

int sk_gguf_writer_add_arr(sk_gguf_writer *w, const char *key, uint32_t elem_type,
                           const void *data, uint64_t count) {
    size_t es = sk_gguf_value_type_size(elem_type);
    uint64_t bytes;
    if (!es || (!data && count) || sk_mul_u64(count, es, &bytes) || bytes > SIZE_MAX)
        return SKYCMD_E_INVALID_ARGUMENT;
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_ARRAY);
    if (st) return st;
    put32(&w->kv, elem_type);
    put64(&w->kv, count);
    if (bytes) sk_buf_append(&w->kv, data, (size_t)bytes);
    return end_key(w);
}

int sk_gguf_writer_add_arr_str(sk_gguf_writer *w, const char *key, const char *const *v,
                               uint64_t count) {
    if (!v && count) return SKYCMD_E_INVALID_ARGUMENT;
    for (uint64_t i = 0; i < count; i++)
        if (!v[i]) return SKYCMD_E_INVALID_ARGUMENT;
    if (key && is_alignment_key(key, strlen(key))) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key, key ? strlen(key) : 0, SK_GGUF_ARRAY);
    if (st) return st;
    put32(&w->kv, SK_GGUF_STRING);
    put64(&w->kv, count);
    for (uint64_t i = 0; i < count; i++) put_str(&w->kv, v[i], strlen(v[i]));
    return end_key(w);
}

/* Encode a value read by sk_gguf (validated bytes: arrays are copied verbatim). */
int sk_gguf_writer_add_value(sk_gguf_writer *w, sk_str key, const sk_gguf_value *v) {
    if (!w || !v || !key.ptr || key.len == 0 || key.len > SIZE_MAX)
        return SKYCMD_E_INVALID_ARGUMENT;
    size_t klen = (size_t)key.len;
    if (is_alignment_key(key.ptr, klen)) {
        if (v->type != SK_GGUF_U32 || v->v.u == 0 || (v->v.u & (v->v.u - 1)) ||
            v->v.u > UINT32_MAX)
            return SKYCMD_E_INVALID_ARGUMENT;
    }
    if (v->type > SK_GGUF_F64) return SKYCMD_E_INVALID_ARGUMENT;
    int st = begin_key(w, key.ptr, klen, v->type);
    if (st) return st;
    switch (v->type) {
    case SK_GGUF_U8: case SK_GGUF_BOOL: sk_buf_putc(&w->kv, (char)(uint8_t)v->v.u); break;
    case SK_GGUF_I8: sk_buf_putc(&w->kv, (char)(uint8_t)(int8_t)v->v.i); break;
    case SK_GGUF_U16: {
        uint16_t u = (uint16_t)v->v.u;
        uint8_t p[2] = {(uint8_t)u, (uint8_t)(u >> 8)};
        sk_buf_append(&w->kv, p, 2);
        break;
    }
    case SK_GGUF_I16: {
        uint16_t u = (uint16_t)(int16_t)v->v.i;
        uint8_t p[2] = {(uint8_t)u, (uint8_t)(u >> 8)};
        sk_buf_append(&w->kv, p, 2);
        break;
    }
    case SK_GGUF_U32: put32(&w->kv, (uint32_t)v->v.u); break;
    case SK_GGUF_I32: put32(&w->kv, (uint32_t)(int32_t)v->v.i); break;
    case SK_GGUF_U64: put64(&w->kv, v->v.u); break;
    case SK_GGUF_I64: put64(&w->kv, (uint64_t)v->v.i); break;
    case SK_GGUF_F32: {
        float f = (float)v->v.f;
        uint32_t u;
        memcpy(&u, &f, 4);
        put32(&w->kv, u);
        break;
    }
    case SK_GGUF_F64: {
        uint64_t u;
        memcpy(&u, &v->v.f, 8);
        put64(&w->kv, u);
        break;
    }
    case SK_GGUF_STRING: put_str(&w->kv, v->v.s.ptr, (size_t)v->v.s.len); break;
    case SK_GGUF_ARRAY:
        put32(&w->kv, v->v.arr.elem_type);
        put64(&w->kv, v->v.arr.count);
        sk_buf_append(&w->kv, v->v.arr.first, (size_t)(v->v.arr.end - v->v.arr.first));
        break;
    default: break;
    }
    if (is_alignment_key(key.ptr, klen)) {
        w->has_alignment_key = 1;
        w->alignment = (uint32_t)v->v.u;
    }
    return end_key(w);
}

int sk_gguf_writer_add_tensor(sk_gguf_writer *w, const char *name, uint32_t n_dims,
                              const uint64_t *ne, uint32_t type, const void *data,
                              uint64_t nbytes, int copy, sk_err *e) {
    if (!w || !name || !ne)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "add tensor: NULL argument");
    size_t nl = strlen(name);
    if (nl == 0 || nl >= SK_GGML_MAX_NAME)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                       "tensor \"%.80s\": name must be 1 to %d bytes", name, SK_GGML_MAX_NAME - 1);
    if (n_dims == 0 || n_dims > 4)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tensor \"%s\": n_dims %u (must be 1 to 4)",
                       name, n_dims);
    if (!sk_ggml_type_known(type))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tensor \"%s\": unknown ggml type %u", name,
                       type);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX || sk_mul_u64(nel, ne[d], &nel) ||
            nel > (uint64_t)INT64_MAX)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                           "tensor \"%s\": bad dimension ne[%u] = %llu", name, d,
                           (unsigned long long)ne[d]);
    }
    if (type == SK_GGML_Q8_0 && ne[0] % SK_QK8_0 != 0)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                       "tensor \"%s\": Q8_0 needs rows that are a multiple of %d elements, ne[0] "
                       "is %llu",
                       name, SK_QK8_0, (unsigned long long)ne[0]);
    uint64_t expect = 0;
    if (sk_mul_u64(sk_ggml_row_size(type, ne[0]), nel / ne[0], &expect) || expect != nbytes)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                       "tensor \"%s\": %llu bytes given, %s with these dims needs %llu", name,
                       (unsigned long long)nbytes, sk_ggml_type_name(type),
                       (unsigned long long)expect);
    if (!data || nbytes > SIZE_MAX)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tensor \"%s\": no data", name);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tensor \"%s\" added twice", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t nc = w->cap_tensors ? w->cap_tensors * 2 : 16;
        wtensor *nt = sk_malloc_array(nc, sizeof *nt);
        if (!nt) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
        if (w->n_tensors) memcpy(nt, w->tensors, w->n_tensors * sizeof *nt);
        free(w->tensors);
        w->tensors = nt;
        w->cap_tensors = nc;
    }
    wtensor t;
    memset(&t, 0, sizeof t);
    t.name = sk_strdup(name);
    if (!t.name) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    t.n_dims = n_dims;
    for (uint32_t d = 0; d < 4; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    t.type = type;
    t.nbytes = nbytes;
    if (copy) {
        t.owned = malloc(nbytes ? (size_t)nbytes : 1);
        if (!t.owned) {
            free(t.name);
            return sk_fail(e, SKYCMD_E_NOMEM, "tensor \"%s\": out of memory for %llu bytes", name,
                           (unsigned long long)nbytes);
        }
        memcpy(t.owned, data, (size_t)nbytes);
        t.data = t.owned;
    } else {
        t.data = data;
    }
    w->tensors[w->n_tensors++] = t;
    return SKYCMD_OK;
}

/* Everything before the tensor data: header, metadata, tensor table, padding. */
static int build_head(sk_gguf_writer *w, sk_buf *head, uint64_t *data_total, sk_err *e) {
    uint64_t n_kv = w->n_keys + (w->has_alignment_key ? 0 : 1);
    sk_buf_append(head, "GGUF", 4);
    put32(head, 3);
    put64(head, w->n_tensors);
    put64(head, n_kv);
    sk_buf_append(head, w->kv.data ? w->kv.data : "", w->kv.len);
    if (!w->has_alignment_key) {
        put_str(head, "general.alignment", 17);
        put32(head, SK_GGUF_U32);
        put32(head, w->alignment);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        put_str(head, t->name, strlen(t->name));
        put32(head, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put64(head, t->ne[d]);
        put32(head, t->type);
        put64(head, off);
        uint64_t end;
        if (sk_add_u64(off, t->nbytes, &end) || sk_add_u64(end, w->alignment - 1, &end))
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tensor data larger than 2^64 bytes");
        off = end / w->alignment * w->alignment;
    }
    size_t rem = head->len % w->alignment;
    if (rem) {
        static const uint8_t zeros[256];
        size_t pad = w->alignment - rem;
        while (pad) {
            size_t k = pad < sizeof zeros ? pad : sizeof zeros;
            sk_buf_append(head, zeros, k);
            pad -= k;
        }
    }
    *data_total = off;
    if (head->failed) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for the GGUF header");
    return SKYCMD_OK;
}

typedef struct sink {
    sk_atomic_file *file;
    sk_buf *mem;
} sink;

static int sink_write(sink *s, const void *p, size_t n, sk_err *e) {
    if (s->file) return sk_atomic_write(s->file, p, n, e);
    sk_buf_append(s->mem, p, n);
    return s->mem->failed ? sk_fail(e, SKYCMD_E_NOMEM, "out of memory") : SKYCMD_OK;
}

static int write_all(sk_gguf_writer *w, sink *s, skycmd_progress_fn progress, void *ud,
                     sk_err *e) {
    if (w->failed || w->kv.failed)
        return sk_fail(e, SKYCMD_E_NOMEM, "an earlier metadata addition ran out of memory");
    sk_buf head;
    sk_buf_init(&head);
    uint64_t total = 0;
    int st = build_head(w, &head, &total, e);
    if (!st) st = sink_write(s, head.data, head.len, e);
    sk_buf_free(&head);
    if (st) return st;
    static const uint8_t zeros[256];
    uint64_t done = 0;
    const size_t chunk = (size_t)1 << 22;
    if (progress && progress(ud, 0, total))
        return sk_fail(e, SKYCMD_E_CANCELLED, "cancelled by the progress callback");
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        uint64_t pos = 0;
        while (pos < t->nbytes) {
            size_t k = (t->nbytes - pos) < chunk ? (size_t)(t->nbytes - pos) : chunk;
            st = sink_write(s, t->data + pos, k, e);
            if (st) return st;
            pos += k;
            done += k;
            if (progress && progress(ud, done, total))
                return sk_fail(e, SKYCMD_E_CANCELLED, "cancelled by the progress callback");
        }
        uint64_t rem = t->nbytes % w->alignment;
        size_t pad = rem ? (size_t)(w->alignment - rem) : 0;
        done += pad;
        while (pad) {
            size_t k = pad < sizeof zeros ? pad : sizeof zeros;
            st = sink_write(s, zeros, k, e);
            if (st) return st;
            pad -= k;
        }
    }
    if (progress && progress(ud, total, total))
        return sk_fail(e, SKYCMD_E_CANCELLED, "cancelled by the progress callback");
    return SKYCMD_OK;
}

int sk_gguf_writer_write(sk_gguf_writer *w, const char *path, skycmd_progress_fn progress,
                         void *user_data, sk_err *e) {
    if (!w || !path) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "write GGUF: NULL argument");
    sk_atomic_file f;
    int st = sk_atomic_open(&f, path, e);
    if (st) return st;
    sink s = {&f, NULL};
    st = write_all(w, &s, progress, user_data, e);
    return sk_atomic_close(&f, st, e);
}

int sk_gguf_writer_write_mem(sk_gguf_writer *w, uint8_t **out, size_t *size, sk_err *e) {
    if (!w || !out || !size) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "write GGUF: NULL argument");
    *out = NULL;
    *size = 0;
    sk_buf b;
    sk_buf_init(&b);
    sink s = {NULL, &b};
    int st = write_all(w, &s, NULL, NULL, e);
    if (st) {
        sk_buf_free(&b);
        return st;
    }
    size_t n = b.len;
    char *d = sk_buf_detach(&b);
    if (!d) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    *out = (uint8_t *)d;
    *size = n;
    return SKYCMD_OK;
}
