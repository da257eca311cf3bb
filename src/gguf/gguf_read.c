/*
 * gguf_read.c - the zero-copy GGUF reader (versions 2 and 3).
 *
 * Contract: sk_gguf_open_file() reads the file into memory the reader owns (read(), not a
 * mapping: a file written over in place or truncated afterwards changes nothing here, and a
 * change while it is read is detected: sk_file_copy_read() in util.h). With
 * SK_GGUF_RELEASABLE, sk_gguf_release_pages() gives whole pages of that copy back (they
 * read as zeros) and records them; sk_gguf_bytes() reads them back from the still-open file
 * first (0xff bytes if the file changed since); a buffer handed over with
 * sk_gguf_open_buffer_ex(SK_GGUF_RELEASABLE) has its released pages discarded for good
 * (sk_platform_pages_discard). sk_gguf_open_buffer() validates the WHOLE file structure up front (header,
 * every metadata value including nested arrays, the tensor table, alignment, data ranges
 * and overlaps), so that every later accessor and the array iterator can walk the bytes
 * without re-checking. Input is hostile: every count and length is bounded by the bytes
 * left before it is used, every sum and product is overflow-checked, nested arrays have a
 * depth limit, and keys and tensor names are looked up through hash tables (duplicates are
 * errors) so that a file with millions of entries costs linear time. Failures return
 * SKYCMD_E_FORMAT with a message naming the section, the item and the byte offset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "../util/platform.h"

/* Nesting limit for arrays of arrays: real files use at most 2. */
#define SK_GGUF_MAX_DEPTH 8

struct sk_gguf {
    sk_file_copy file;      /* sk_gguf_open_file*(): the file's bytes, read and owned */
    int owns_file;
    int releasable;         /* SK_GGUF_RELEASABLE: release_pages gives pages back */
    size_t (*drops)[2];     /* byte ranges (offset, length) given back, refilled by bytes() */
    size_t n_drops, drops_cap;
    const uint8_t *data;
    size_t size;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;
    size_t n_kv;
    sk_str *keys;
    sk_gguf_value *vals;
    uint64_t *kv_offsets;   /* byte offset of each key: used in messages */
    size_t n_tensors;
    sk_gguf_tensor *tensors;
    uint64_t *t_offsets;    /* byte offset of each tensor's info: used in messages */
    size_t *kv_hash;        /* open addressing, index + 1, 0 = empty */
    size_t kv_hash_cap;
    size_t *t_hash;
    size_t t_hash_cap;
};

/* ---- little-endian reads (the caller checked the bounds) ---- */
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

int sk_str_eq(sk_str s, const char *c) {
    if (!c) return 0;
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

static int str_same(sk_str a, sk_str b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

size_t sk_gguf_value_type_size(uint32_t t) {
    switch (t) {
    case SK_GGUF_U8: case SK_GGUF_I8: case SK_GGUF_BOOL: return 1;
    case SK_GGUF_U16: case SK_GGUF_I16: return 2;
    case SK_GGUF_U32: case SK_GGUF_I32: case SK_GGUF_F32: return 4;
    case SK_GGUF_U64: case SK_GGUF_I64: case SK_GGUF_F64: return 8;
    default: return 0;
    }
}

static const char *value_type_name(uint32_t t) {
    static const char *names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                  "bool", "string", "array", "u64", "i64", "f64"};
    return t <= SK_GGUF_F64 ? names[t] : "unknown";
}

/* A bounded cursor over the file. */
typedef struct cur {
    const uint8_t *base;
    size_t size;
    size_t pos;
} cur;

static size_t left(const cur *c) { return c->size - c->pos; }

/* Decode a fixed-size scalar of type t at p into v. */
static void decode_scalar(uint32_t t, const uint8_t *p, sk_gguf_value *v) {
    v->type = t;
    switch (t) {
    case SK_GGUF_U8: v->v.u = p[0]; break;
    case SK_GGUF_BOOL: v->v.u = p[0]; break;
    case SK_GGUF_I8: v->v.i = (int8_t)p[0]; break;
    case SK_GGUF_U16: v->v.u = rd16(p); break;
    case SK_GGUF_I16: v->v.i = (int16_t)rd16(p); break;
    case SK_GGUF_U32: v->v.u = rd32(p); break;
    case SK_GGUF_I32: v->v.i = (int32_t)rd32(p); break;
    case SK_GGUF_U64: v->v.u = rd64(p); break;
    case SK_GGUF_I64: v->v.i = (int64_t)rd64(p); break;
    case SK_GGUF_F32: {
        uint32_t b = rd32(p);
        float f;
        memcpy(&f, &b, 4);
        v->v.f = f;
        break;
    }
    case SK_GGUF_F64: {
        uint64_t b = rd64(p);
        double d;
        memcpy(&d, &b, 8);
        v->v.f = d;
        break;
    }
    default: break;
    }
}

/* Read a string (u64 length + bytes). */
static int read_str(cur *c, sk_str *s, const char *what, sk_err *e) {
    size_t at = c->pos;
    if (left(c) < 8)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: length truncated at byte offset %zu", what, at);
    uint64_t n = rd64(c->base + c->pos);
    c->pos += 8;
    if (n > left(c))
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: string length %llu at byte offset %zu runs past the end of the "
                       "file (%zu bytes left)",
                       what, (unsigned long long)n, at, left(c));
    s->ptr = (const char *)(c->base + c->pos);
    s->len = n;
    c->pos += (size_t)n;
    return SKYCMD_OK;
}

static int read_value(cur *c, uint32_t type, sk_gguf_value *v, int depth, const char *what,
                      sk_err *e);

/* An array body: element type, count, elements. Every element is validated. */
static int read_array(cur *c, sk_gguf_value *v, int depth, const char *what, sk_err *e) {
    size_t at = c->pos;
    if (depth >= SK_GGUF_MAX_DEPTH)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: arrays nested deeper than %d at byte offset %zu", what,
                       SK_GGUF_MAX_DEPTH, at);
    if (left(c) < 12)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: array header truncated at byte offset %zu",
                       what, at);
    uint32_t et = rd32(c->base + c->pos);
    uint64_t count = rd64(c->base + c->pos + 4);
    c->pos += 12;
    if (et > SK_GGUF_F64)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: unknown array element type %u at byte offset %zu", what, et, at);
    v->type = SK_GGUF_ARRAY;
    v->v.arr.elem_type = et;
    v->v.arr.count = count;
    v->v.arr.first = c->base + c->pos;
    size_t es = sk_gguf_value_type_size(et);
    if (es) {
        uint64_t bytes;
        if (sk_mul_u64(count, es, &bytes) != 0 || bytes > left(c))
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "%s: array of %llu %s at byte offset %zu runs past the end of the "
                           "file (%zu bytes left)",
                           what, (unsigned long long)count, value_type_name(et), at, left(c));
        if (et == SK_GGUF_BOOL) {
            for (uint64_t i = 0; i < count; i++)
                if (c->base[c->pos + i] > 1)
                    return sk_fail(e, SKYCMD_E_FORMAT,
                                   "%s: bool element %llu is %u (not 0 or 1) at byte offset %zu",
                                   what, (unsigned long long)i, c->base[c->pos + i],
                                   c->pos + (size_t)i);
        }
        c->pos += (size_t)bytes;
    } else {
        /* Each string takes >= 8 bytes, each nested array >= 12: a lying count fails here
         * before any loop runs for long. */
        uint64_t min_each = et == SK_GGUF_STRING ? 8 : 12;
        if (count > left(c) / min_each)
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "%s: array count %llu of %s at byte offset %zu cannot fit in the "
                           "%zu bytes left",
                           what, (unsigned long long)count, value_type_name(et), at, left(c));
        for (uint64_t i = 0; i < count; i++) {
            sk_gguf_value el;
            int st = read_value(c, et, &el, depth + 1, what, e);
            if (st) return st;
        }
    }
    v->v.arr.end = c->base + c->pos;
    return SKYCMD_OK;
}

static int read_value(cur *c, uint32_t type, sk_gguf_value *v, int depth, const char *what,
                      sk_err *e) {
    size_t at = c->pos;
    memset(v, 0, sizeof *v);
    v->type = type;
    if (type == SK_GGUF_STRING) return read_str(c, &v->v.s, what, e);
    if (type == SK_GGUF_ARRAY) return read_array(c, v, depth, what, e);
    size_t es = sk_gguf_value_type_size(type);
    if (!es)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: unknown value type %u at byte offset %zu", what,
                       type, at);
    if (left(c) < es)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: %s value truncated at byte offset %zu", what,
                       value_type_name(type), at);
    if (type == SK_GGUF_BOOL && c->base[c->pos] > 1)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: bool value %u (not 0 or 1) at byte offset %zu",
                       what, c->base[c->pos], at);
    decode_scalar(type, c->base + c->pos, v);
    c->pos += es;
    return SKYCMD_OK;
}

/* Print at most 64 bytes of a name for messages, replacing anything non-printable. */
static void name_for_msg(sk_str s, char *out, size_t cap) {
    size_t n = s.len < cap - 4 ? (size_t)s.len : cap - 4;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        out[j++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (n < s.len) { out[j++] = '.'; out[j++] = '.'; out[j++] = '.'; }
    out[j] = '\0';
}

static size_t hash_cap_for(size_t n) {
    size_t cap = 16;
    while (cap < n * 2 + 1) cap <<= 1;
    return cap;
}

/* Insert names[i] into a hash table; return the index of an equal name already there, or
 * (size_t)-1 when it was inserted. */
static size_t hash_insert(size_t *tab, size_t cap, const sk_str *names, size_t stride_bytes,
                          size_t i) {
#define NAME_AT(k) (*(const sk_str *)((const char *)names + (k) * stride_bytes))
    sk_str s = NAME_AT(i);
    size_t h = (size_t)sk_fnv1a64(s.ptr, (size_t)s.len) & (cap - 1);
    while (tab[h]) {
        size_t k = tab[h] - 1;
        if (str_same(NAME_AT(k), s)) return k;
        h = (h + 1) & (cap - 1);
    }
    tab[h] = i + 1;
    return (size_t)-1;
#undef NAME_AT
}

static size_t hash_find(const size_t *tab, size_t cap, const sk_str *names, size_t stride_bytes,
                        const char *key) {
    if (!tab || !key) return (size_t)-1;
    size_t n = strlen(key);
    size_t h = (size_t)sk_fnv1a64(key, n) & (cap - 1);
    while (tab[h]) {
        size_t k = tab[h] - 1;
        const sk_str *s = (const sk_str *)((const char *)names + k * stride_bytes);
        if (s->len == n && memcmp(s->ptr, key, n) == 0) return k;
        h = (h + 1) & (cap - 1);
    }
    return (size_t)-1;
}

void sk_gguf_close(sk_gguf *g) {
    if (!g) return;
    if (g->owns_file) sk_file_copy_free(&g->file);
    free(g->drops);
    free(g->keys);
    free(g->vals);
    free(g->kv_offsets);
    free(g->tensors);
    free(g->t_offsets);
    free(g->kv_hash);
    free(g->t_hash);
    free(g);
}

typedef struct span {
    uint64_t start, end;
    size_t index;
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int parse(sk_gguf *g, sk_err *e) {
    cur c = {g->data, g->size, 0};
    if (g->size < 4)
        return sk_fail(e, SKYCMD_E_FORMAT, "not a GGUF file: only %zu bytes (no magic)", g->size);
    if (memcmp(g->data, "GGUF", 4) != 0)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "not a GGUF file: bad magic %02x %02x %02x %02x at byte offset 0 "
                       "(expected \"GGUF\")",
                       g->data[0], g->data[1], g->data[2], g->data[3]);
    if (g->size < 8)
        return sk_fail(e, SKYCMD_E_FORMAT, "header: version truncated at byte offset 4");
    g->version = rd32(g->data + 4);
    if (g->version == 1)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "header: GGUF version 1 at byte offset 4 is not supported (only 2 and 3)");
    if (g->version != 2 && g->version != 3)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "header: unsupported GGUF version %u at byte offset 4 (expected 2 or 3%s)",
                       g->version,
                       (g->version & 0xffff) == 0 ? "; a big-endian file?" : "");
    if (g->size < 24)
        return sk_fail(e, SKYCMD_E_FORMAT, "header: counts truncated (file is %zu bytes, the "
                       "header needs 24)", g->size);
    uint64_t n_tensors = rd64(g->data + 8);
    uint64_t n_kv = rd64(g->data + 16);
    c.pos = 24;
    /* Each key takes >= 13 bytes (length, type, one byte of value); each tensor >= 32. */
    if (n_kv > left(&c) / 13)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "header: metadata key count %llu at byte offset 16 cannot fit in the %zu "
                       "bytes of the file",
                       (unsigned long long)n_kv, g->size);
    if (n_tensors > left(&c) / 32)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "header: tensor count %llu at byte offset 8 cannot fit in the %zu bytes "
                       "of the file",
                       (unsigned long long)n_tensors, g->size);
    g->n_kv = (size_t)n_kv;
    g->n_tensors = (size_t)n_tensors;
    g->keys = sk_calloc_array(g->n_kv ? g->n_kv : 1, sizeof *g->keys);
    g->vals = sk_calloc_array(g->n_kv ? g->n_kv : 1, sizeof *g->vals);
    g->kv_offsets = sk_calloc_array(g->n_kv ? g->n_kv : 1, sizeof *g->kv_offsets);
    g->tensors = sk_calloc_array(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    g->t_offsets = sk_calloc_array(g->n_tensors ? g->n_tensors : 1, sizeof *g->t_offsets);
    g->kv_hash_cap = hash_cap_for(g->n_kv);
    g->kv_hash = sk_calloc_array(g->kv_hash_cap, sizeof *g->kv_hash);
    g->t_hash_cap = hash_cap_for(g->n_tensors);
    g->t_hash = sk_calloc_array(g->t_hash_cap, sizeof *g->t_hash);
    if (!g->keys || !g->vals || !g->kv_offsets || !g->tensors || !g->t_offsets || !g->kv_hash || !g->t_hash)
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu keys and %zu tensors", g->n_kv,
                       g->n_tensors);

    /* ---- metadata ---- */
    g->alignment = SK_GGUF_DEFAULT_ALIGNMENT;
    char what[160];
    char nm[80];
    for (size_t i = 0; i < g->n_kv; i++) {
        size_t at = c.pos;
        g->kv_offsets[i] = at;
        snprintf(what, sizeof what, "metadata key #%zu", i);
        int st = read_str(&c, &g->keys[i], what, e);
        if (st) return st;
        sk_str k = g->keys[i];
        if (k.len == 0)
            return sk_fail(e, SKYCMD_E_FORMAT, "metadata key #%zu at byte offset %zu is empty", i,
                           at);
        name_for_msg(k, nm, sizeof nm);
        if (!sk_utf8_valid(k.ptr, (size_t)k.len))
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "metadata key #%zu \"%s\" at byte offset %zu is not valid UTF-8", i,
                           nm, at);
        size_t dup = hash_insert(g->kv_hash, g->kv_hash_cap, g->keys, sizeof *g->keys, i);
        if (dup != (size_t)-1)
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "metadata key \"%s\" at byte offset %zu is a duplicate (first at "
                           "byte offset %llu)",
                           nm, at, (unsigned long long)g->kv_offsets[dup]);
        snprintf(what, sizeof what, "metadata key \"%s\"", nm);
        if (left(&c) < 4)
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: value type truncated at byte offset %zu",
                           what, c.pos);
        uint32_t type = rd32(c.base + c.pos);
        if (type > SK_GGUF_F64)
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: unknown value type %u at byte offset %zu",
                           what, type, c.pos);
        c.pos += 4;
        st = read_value(&c, type, &g->vals[i], 0, what, e);
        if (st) return st;
        if (sk_str_eq(k, "general.alignment")) {
            if (type != SK_GGUF_U32)
                return sk_fail(e, SKYCMD_E_FORMAT,
                               "metadata key \"general.alignment\" at byte offset %zu has type "
                               "%s (expected u32)",
                               at, value_type_name(type));
            uint64_t a = g->vals[i].v.u;
            if (a == 0 || (a & (a - 1)) != 0)
                return sk_fail(e, SKYCMD_E_FORMAT,
                               "metadata key \"general.alignment\" at byte offset %zu is %llu "
                               "(must be a power of two)",
                               at, (unsigned long long)a);
            g->alignment = a;
        }
    }

    /* ---- tensor table ---- */
    for (size_t i = 0; i < g->n_tensors; i++) {
        sk_gguf_tensor *t = &g->tensors[i];
        size_t at = c.pos;
        g->t_offsets[i] = at;
        snprintf(what, sizeof what, "tensor #%zu", i);
        int st = read_str(&c, &t->name, what, e);
        if (st) return st;
        name_for_msg(t->name, nm, sizeof nm);
        snprintf(what, sizeof what, "tensor #%zu \"%s\" (info at byte offset %zu)", i, nm, at);
        if (t->name.len == 0)
            return sk_fail(e, SKYCMD_E_FORMAT, "tensor #%zu at byte offset %zu has an empty name",
                           i, at);
        if (!sk_utf8_valid(t->name.ptr, (size_t)t->name.len))
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: name is not valid UTF-8", what);
        size_t dup = hash_insert(g->t_hash, g->t_hash_cap, &g->tensors[0].name,
                                 sizeof *g->tensors, i);
        if (dup != (size_t)-1)
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: duplicate tensor name (also tensor #%zu)",
                           what, dup);
        if (left(&c) < 4)
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: n_dims truncated at byte offset %zu", what,
                           c.pos);
        t->n_dims = rd32(c.base + c.pos);
        if (t->n_dims == 0 || t->n_dims > 4)
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "%s: n_dims %u at byte offset %zu (must be 1 to 4)", what, t->n_dims,
                           c.pos);
        c.pos += 4;
        if (left(&c) < (size_t)t->n_dims * 8 + 12)
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "%s: dims, type and offset truncated at byte offset %zu", what, c.pos);
        uint64_t nel = 1;
        for (uint32_t d = 0; d < 4; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t v = rd64(c.base + c.pos + 8 * d);
            if (v == 0 || v > (uint64_t)INT64_MAX)
                return sk_fail(e, SKYCMD_E_FORMAT,
                               "%s: dimension ne[%u] = %llu at byte offset %zu (must be 1 to "
                               "2^63-1)",
                               what, d, (unsigned long long)v, c.pos + 8 * (size_t)d);
            t->ne[d] = v;
            if (sk_mul_u64(nel, v, &nel) != 0 || nel > (uint64_t)INT64_MAX)
                return sk_fail(e, SKYCMD_E_FORMAT,
                               "%s: element count overflows at ne[%u] (byte offset %zu)", what, d,
                               c.pos + 8 * (size_t)d);
        }
        c.pos += (size_t)t->n_dims * 8;
        t->n_elements = nel;
        t->type = rd32(c.base + c.pos);
        size_t type_at = c.pos;
        t->offset = rd64(c.base + c.pos + 4);
        size_t off_at = c.pos + 4;
        c.pos += 12;
        t->nbytes = 0;
        t->data = NULL;
        if (sk_ggml_type_known(t->type)) {
            uint64_t bs = sk_ggml_block_size(t->type);
            if (t->ne[0] % bs != 0)
                return sk_fail(e, SKYCMD_E_FORMAT,
                               "%s: type %s needs rows that are a multiple of %llu elements, "
                               "ne[0] is %llu (type at byte offset %zu)",
                               what, sk_ggml_type_name(t->type), (unsigned long long)bs,
                               (unsigned long long)t->ne[0], type_at);
            uint64_t row = sk_ggml_row_size(t->type, t->ne[0]);
            uint64_t rows = nel / t->ne[0];
            if (row == 0 || sk_mul_u64(row, rows, &t->nbytes) != 0)
                return sk_fail(e, SKYCMD_E_FORMAT, "%s: byte size overflows", what);
        }
        (void)off_at;
    }

    /* ---- data section ---- */
    uint64_t info_end = c.pos;
    uint64_t rem = info_end % g->alignment;
    uint64_t pad = rem ? g->alignment - rem : 0;
    if (sk_add_u64(info_end, pad, &g->data_offset) != 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "data section offset overflows");
    if (g->n_tensors > 0 && g->data_offset > g->size)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "tensor data section starts at byte offset %llu, past the end of the "
                       "file (%zu bytes)",
                       (unsigned long long)g->data_offset, g->size);
    uint64_t data_size = g->data_offset <= g->size ? g->size - g->data_offset : 0;

    span *spans = NULL;
    size_t n_spans = 0;
    if (g->n_tensors) {
        spans = sk_malloc_array(g->n_tensors, sizeof *spans);
        if (!spans) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    int st = SKYCMD_OK;
    for (size_t i = 0; i < g->n_tensors && !st; i++) {
        sk_gguf_tensor *t = &g->tensors[i];
        name_for_msg(t->name, nm, sizeof nm);
        if (t->offset % g->alignment != 0) {
            st = sk_fail(e, SKYCMD_E_FORMAT,
                         "tensor \"%s\" (info at byte offset %llu): data offset %llu is not a "
                         "multiple of the alignment %llu",
                         nm, (unsigned long long)g->t_offsets[i], (unsigned long long)t->offset,
                         (unsigned long long)g->alignment);
            break;
        }
        if (t->offset > data_size) {
            st = sk_fail(e, SKYCMD_E_FORMAT,
                         "tensor \"%s\" (info at byte offset %llu): data offset %llu (byte "
                         "offset %llu in the file) is past the end of the file (%zu bytes)",
                         nm, (unsigned long long)g->t_offsets[i], (unsigned long long)t->offset,
                         (unsigned long long)(g->data_offset + t->offset), g->size);
            break;
        }
        if (!sk_ggml_type_known(t->type)) continue; /* other(N): size unknown, kept as is */
        if (t->nbytes > data_size - t->offset) {
            st = sk_fail(e, SKYCMD_E_FORMAT,
                         "tensor \"%s\" (info at byte offset %llu): %llu bytes of %s data at "
                         "byte offset %llu run past the end of the file (%zu bytes)",
                         nm, (unsigned long long)g->t_offsets[i], (unsigned long long)t->nbytes, sk_ggml_type_name(t->type),
                         (unsigned long long)(g->data_offset + t->offset), g->size);
            break;
        }
        t->data = g->data + g->data_offset + t->offset;
        spans[n_spans].start = t->offset;
        spans[n_spans].end = t->offset + t->nbytes;
        spans[n_spans].index = i;
        n_spans++;
    }
    if (!st && n_spans > 1) {
        qsort(spans, n_spans, sizeof *spans, span_cmp);
        for (size_t k = 1; k < n_spans; k++) {
            if (spans[k].start < spans[k - 1].end) {
                char nm2[80];
                name_for_msg(g->tensors[spans[k - 1].index].name, nm, sizeof nm);
                name_for_msg(g->tensors[spans[k].index].name, nm2, sizeof nm2);
                st = sk_fail(e, SKYCMD_E_FORMAT,
                             "tensors \"%s\" (data at byte offset %llu, %llu bytes) and "
                             "\"%s\" (data at byte offset %llu) overlap",
                             nm, (unsigned long long)(g->data_offset + spans[k - 1].start),
                             (unsigned long long)(spans[k - 1].end - spans[k - 1].start), nm2,
                             (unsigned long long)(g->data_offset + spans[k].start));
                break;
            }
        }
    }
    free(spans);
    return st;
}

void sk_gguf_release_pages(const sk_gguf *g, const void *p, size_t n) {
    if (!g || !g->releasable || !p) return;
    if (!g->owns_file) {
        /* a buffer handed over (sk_gguf_open_buffer_ex): its pages are simply given back,
         * only those inside the buffer */
        const uintptr_t lo = (uintptr_t)g->data, hi = lo + g->size, a = (uintptr_t)p;
        if (a < lo || a >= hi) return;
        (void)sk_platform_pages_discard((void *)(uintptr_t)p, n < hi - a ? n : (size_t)(hi - a));
        return;
    }
    sk_gguf *w = (sk_gguf *)(uintptr_t)g;  /* the reader's own bookkeeping, not its contents */
    if (w->n_drops == w->drops_cap) {
        size_t cap = w->drops_cap ? 2 * w->drops_cap : 64;
        size_t(*nd)[2] = realloc(w->drops, cap * sizeof *nd);
        if (!nd) return;  /* keep the pages: only memory is lost */
        w->drops = nd;
        w->drops_cap = cap;
    }
    size_t off, len;
    sk_file_copy_drop(&w->file, p, n, &off, &len);
    if (len == 0) return;
    w->drops[w->n_drops][0] = off;
    w->drops[w->n_drops][1] = len;
    w->n_drops++;
}

int sk_gguf_open_buffer(const void *data, size_t size, sk_gguf **out, sk_err *e) {
    if (!out) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_gguf_open_buffer: out is NULL");
    *out = NULL;
    if (!data && size) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "GGUF buffer is NULL");
    sk_gguf *g = calloc(1, sizeof *g);
    if (!g) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    static const uint8_t empty[1];
    g->data = data ? data : empty;
    g->size = size;
    int st = parse(g, e);
    if (st) {
        sk_gguf_close(g);
        return st;
    }
    *out = g;
    return SKYCMD_OK;
}

int sk_gguf_open_buffer_ex(void *data, size_t size, int flags, sk_gguf **out, sk_err *e) {
    int st = sk_gguf_open_buffer(data, size, out, e);
    if (!st && data) (*out)->releasable = (flags & SK_GGUF_RELEASABLE) != 0;
    return st;
}

int sk_gguf_open_file_progress(const char *path, int flags, sk_share prog, sk_gguf **out,
                               sk_err *e) {
    if (!out || !path) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_gguf_open_file: NULL argument");
    *out = NULL;
    const int releasable = (flags & SK_GGUF_RELEASABLE) != 0;
    sk_file_copy f;
    int st = sk_file_copy_read(path, releasable, prog, &f, e);
    if (st) {
        if (st == SKYCMD_E_CANCELLED) sk_err_prefix(e, "%s: reading the file", path);
        return st;
    }
    sk_gguf *g = NULL;
    st = sk_gguf_open_buffer(f.data, f.size, &g, e);
    if (st) {
        sk_file_copy_free(&f);
        sk_err_prefix(e, "%s", path);
        return st;
    }
    g->file = f;
    g->owns_file = 1;
    g->releasable = releasable;
    *out = g;
    return SKYCMD_OK;
}

int sk_gguf_open_file_ex(const char *path, int flags, sk_gguf **out, sk_err *e) {
    return sk_gguf_open_file_progress(path, flags, SK_SHARE_NONE, out, e);
}

int sk_gguf_open_file(const char *path, sk_gguf **out, sk_err *e) {
    return sk_gguf_open_file_ex(path, 0, out, e);
}

uint32_t sk_gguf_version(const sk_gguf *g) { return g->version; }
uint64_t sk_gguf_file_size(const sk_gguf *g) { return g->size; }
uint64_t sk_gguf_alignment(const sk_gguf *g) { return g->alignment; }
uint64_t sk_gguf_data_offset(const sk_gguf *g) { return g->data_offset; }
const uint8_t *sk_gguf_bytes(const sk_gguf *g) {
    if (g->n_drops) {
        sk_gguf *w = (sk_gguf *)(uintptr_t)g;
        for (size_t i = 0; i < w->n_drops; i++)
            (void)sk_file_copy_refill(&w->file, w->drops[i][0], w->drops[i][1]);
        w->n_drops = 0;
    }
    return g->data;
}

size_t sk_gguf_n_kv(const sk_gguf *g) { return g->n_kv; }
sk_str sk_gguf_kv_key(const sk_gguf *g, size_t i) {
    sk_str none = {"", 0};
    return i < g->n_kv ? g->keys[i] : none;
}
const sk_gguf_value *sk_gguf_kv_value(const sk_gguf *g, size_t i) {
    return i < g->n_kv ? &g->vals[i] : NULL;
}
int64_t sk_gguf_find_key(const sk_gguf *g, const char *key) {
    size_t k = hash_find(g->kv_hash, g->kv_hash_cap, g->keys, sizeof *g->keys, key);
    return k == (size_t)-1 ? -1 : (int64_t)k;
}

size_t sk_gguf_n_tensors(const sk_gguf *g) { return g->n_tensors; }
const sk_gguf_tensor *sk_gguf_tensor_at(const sk_gguf *g, size_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}
const sk_gguf_tensor *sk_gguf_find_tensor(const sk_gguf *g, const char *name) {
    if (!g->n_tensors) return NULL;
    size_t k = hash_find(g->t_hash, g->t_hash_cap, &g->tensors[0].name, sizeof *g->tensors, name);
    return k == (size_t)-1 ? NULL : &g->tensors[k];
}

uint32_t sk_gguf_tensor_shape(const sk_gguf_tensor *t, uint64_t shape[4]) {
    for (uint32_t d = 0; d < 4; d++) shape[d] = 1;
    for (uint32_t d = 0; d < t->n_dims && d < 4; d++) shape[d] = t->ne[t->n_dims - 1 - d];
    return t->n_dims;
}

const char *sk_gguf_value_type_name(uint32_t type) { return value_type_name(type); }

/* ---- typed getters ---- */
static const sk_gguf_value *lookup(const sk_gguf *g, const char *key) {
    int64_t i = sk_gguf_find_key(g, key);
    return i < 0 ? NULL : &g->vals[i];
}

static int is_unsigned(uint32_t t) {
    return t == SK_GGUF_U8 || t == SK_GGUF_U16 || t == SK_GGUF_U32 || t == SK_GGUF_U64;
}
static int is_signed(uint32_t t) {
    return t == SK_GGUF_I8 || t == SK_GGUF_I16 || t == SK_GGUF_I32 || t == SK_GGUF_I64;
}

int sk_gguf_get_u64(const sk_gguf *g, const char *key, uint64_t *out) {
    const sk_gguf_value *v = lookup(g, key);
    if (!v) return SKYCMD_E_NOT_FOUND;
    if (is_unsigned(v->type)) { *out = v->v.u; return SKYCMD_OK; }
    if (is_signed(v->type) && v->v.i >= 0) { *out = (uint64_t)v->v.i; return SKYCMD_OK; }
    return SKYCMD_E_FORMAT;
}
int sk_gguf_get_u32(const sk_gguf *g, const char *key, uint32_t *out) {
    uint64_t u;
    int st = sk_gguf_get_u64(g, key, &u);
    if (st) return st;
    if (u > UINT32_MAX) return SKYCMD_E_FORMAT;
    *out = (uint32_t)u;
    return SKYCMD_OK;
}
int sk_gguf_get_i64(const sk_gguf *g, const char *key, int64_t *out) {
    const sk_gguf_value *v = lookup(g, key);
    if (!v) return SKYCMD_E_NOT_FOUND;
    if (is_signed(v->type)) { *out = v->v.i; return SKYCMD_OK; }
    if (is_unsigned(v->type) && v->v.u <= (uint64_t)INT64_MAX) {
        *out = (int64_t)v->v.u;
        return SKYCMD_OK;
    }
    return SKYCMD_E_FORMAT;
}
int sk_gguf_get_f32(const sk_gguf *g, const char *key, float *out) {
    const sk_gguf_value *v = lookup(g, key);
    if (!v) return SKYCMD_E_NOT_FOUND;
    if (v->type != SK_GGUF_F32 && v->type != SK_GGUF_F64) return SKYCMD_E_FORMAT;
    *out = (float)v->v.f;
    return SKYCMD_OK;
}
int sk_gguf_get_bool(const sk_gguf *g, const char *key, int *out) {
    const sk_gguf_value *v = lookup(g, key);
    if (!v) return SKYCMD_E_NOT_FOUND;
    if (v->type != SK_GGUF_BOOL) return SKYCMD_E_FORMAT;
    *out = v->v.u != 0;
    return SKYCMD_OK;
}
int sk_gguf_get_str(const sk_gguf *g, const char *key, sk_str *out) {
    const sk_gguf_value *v = lookup(g, key);
    if (!v) return SKYCMD_E_NOT_FOUND;
    if (v->type != SK_GGUF_STRING) return SKYCMD_E_FORMAT;
    *out = v->v.s;
    return SKYCMD_OK;
}
int sk_gguf_get_arr(const sk_gguf *g, const char *key, const sk_gguf_value **out) {
    const sk_gguf_value *v = lookup(g, key);
    if (!v) return SKYCMD_E_NOT_FOUND;
    if (v->type != SK_GGUF_ARRAY) return SKYCMD_E_FORMAT;
    *out = v;
    return SKYCMD_OK;
}

/* ---- array iteration over validated bytes ---- */
void sk_gguf_iter_init(sk_gguf_iter *it, const sk_gguf_value *arr) {
    it->arr = arr;
    it->p = (arr && arr->type == SK_GGUF_ARRAY) ? arr->v.arr.first : NULL;
    it->index = 0;
}

/* Bytes taken by a validated value of type t at p (nested arrays walked). */
static const uint8_t *skip_value(uint32_t t, const uint8_t *p) {
    size_t es = sk_gguf_value_type_size(t);
    if (es) return p + es;
    if (t == SK_GGUF_STRING) return p + 8 + rd64(p);
    /* array */
    uint32_t et = rd32(p);
    uint64_t n = rd64(p + 4);
    p += 12;
    size_t ees = sk_gguf_value_type_size(et);
    if (ees) return p + n * ees;
    for (uint64_t i = 0; i < n; i++) p = skip_value(et, p);
    return p;
}

int sk_gguf_iter_next(sk_gguf_iter *it, sk_gguf_value *out) {
    if (!it->arr || !it->p || it->index >= it->arr->v.arr.count) return 0;
    uint32_t et = it->arr->v.arr.elem_type;
    memset(out, 0, sizeof *out);
    out->type = et;
    const uint8_t *p = it->p;
    if (et == SK_GGUF_STRING) {
        out->v.s.len = rd64(p);
        out->v.s.ptr = (const char *)(p + 8);
    } else if (et == SK_GGUF_ARRAY) {
        out->v.arr.elem_type = rd32(p);
        out->v.arr.count = rd64(p + 4);
        out->v.arr.first = p + 12;
    } else {
        decode_scalar(et, p, out);
    }
    it->p = skip_value(et, p);
    if (et == SK_GGUF_ARRAY) out->v.arr.end = it->p;
    it->index++;
    return 1;
}
