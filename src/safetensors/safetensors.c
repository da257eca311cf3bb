/*
 * safetensors.c - reader and writer of the safetensors format; see safetensors.h for the
 * contract. The header is parsed with cJSON; everything read from it is validated before a
 * tensor is exposed.
 */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/gguf.h"
#include "../util/json_syntax.h"
#include "../util/platform.h"

struct sk_safetensors {
    sk_map map;          /* valid when opened from a file */
    int mapped;
    sk_st_tensor *tensors;
    size_t n;
};

typedef struct st_dtype {
    const char *name;
    uint32_t size;
    int supported;
    uint32_t ggml;
} st_dtype;

/* Every dtype of the format; only the float types we compute with are supported. */
static const st_dtype k_dtypes[] = {
    {"F32", 4, 1, SK_GGML_F32},  {"F16", 2, 1, SK_GGML_F16},  {"BF16", 2, 1, SK_GGML_BF16},
    {"F64", 8, 0, 0},            {"I64", 8, 0, 0},            {"U64", 8, 0, 0},
    {"I32", 4, 0, 0},            {"U32", 4, 0, 0},            {"I16", 2, 0, 0},
    {"U16", 2, 0, 0},            {"I8", 1, 0, 0},             {"U8", 1, 0, 0},
    {"BOOL", 1, 0, 0},           {"F8_E4M3", 1, 0, 0},        {"F8_E5M2", 1, 0, 0},
    {"F8_E8M0", 1, 0, 0},
};

static const st_dtype *find_dtype(const char *s) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (strcmp(k_dtypes[i].name, s) == 0) return &k_dtypes[i];
    return NULL;
}

/* A JSON number that is a non-negative integer representable exactly in a double. */
static int json_u64(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0.0) || d > 9007199254740992.0 || floor(d) != d) return -1;
    *out = (uint64_t)d;
    return 0;
}

static void free_tensors(sk_st_tensor *t, size_t n) {
    if (!t) return;
    for (size_t i = 0; i < n; i++) free(t[i].name);
    free(t);
}

void sk_st_close(sk_safetensors *st) {
    if (!st) return;
    free_tensors(st->tensors, st->n);
    if (st->mapped) sk_unmap(&st->map);
    free(st);
}

static int cmp_offset(const void *a, const void *b) {
    const sk_st_tensor *x = *(const sk_st_tensor *const *)a, *y = *(const sk_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    const sk_st_tensor *x = *(const sk_st_tensor *const *)a, *y = *(const sk_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Parse one header entry into t. */
static int parse_entry(const cJSON *item, sk_st_tensor *t, uint64_t data_size, const char *lbl,
                       sk_err *e) {
    const char *name = item->string;
    if (!cJSON_IsObject(item))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: header entry \"%s\" is not an object", lbl, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dt))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\": missing or non-string \"dtype\"",
                       lbl, name);
    const st_dtype *d = find_dtype(dt->valuestring);
    if (!d)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\": unknown dtype \"%.16s\"", lbl,
                       name, dt->valuestring);
    snprintf(t->dtype, sizeof t->dtype, "%s", d->name);
    t->supported = d->supported;
    t->ggml_type = d->ggml;
    t->elem_size = d->size;
    if (!cJSON_IsArray(sh))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\": missing or non-array \"shape\"",
                       lbl, name);
    int nd = cJSON_GetArraySize(sh);
    if (nd < 0 || nd > SK_ST_MAX_DIMS)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\": %d dimensions (at most %d)", lbl,
                       name, nd, SK_ST_MAX_DIMS);
    t->n_dims = (uint32_t)nd;
    uint64_t count = 1;
    int i = 0;
    for (const cJSON *v = sh->child; v; v = v->next, i++) {
        uint64_t dim;
        if (json_u64(v, &dim))
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "%s: tensor \"%s\": shape[%d] is not a non-negative integer", lbl,
                           name, i);
        t->shape[i] = dim;
        if (sk_mul_u64(count, dim, &count))
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\": element count overflows", lbl,
                           name);
    }
    t->n_elements = count;
    uint64_t need;
    if (sk_mul_u64(count, d->size, &need))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\": byte size overflows", lbl, name);
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: tensor \"%s\": \"data_offsets\" must be an array of 2 integers", lbl,
                       name);
    uint64_t b, en;
    if (json_u64(off->child, &b) || json_u64(off->child->next, &en))
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: tensor \"%s\": \"data_offsets\" must be non-negative integers", lbl,
                       name);
    if (en < b || en > data_size)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: tensor \"%s\": data_offsets [%llu, %llu] outside the %llu-byte data "
                       "section (file truncated?)",
                       lbl, name, (unsigned long long)b, (unsigned long long)en,
                       (unsigned long long)data_size);
    if (en - b != need)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: tensor \"%s\": data_offsets give %llu bytes but %s shape needs %llu",
                       lbl, name, (unsigned long long)(en - b), d->name,
                       (unsigned long long)need);
    t->offset = b;
    t->nbytes = need;
    return SKYCMD_OK;
}

int sk_st_open_buffer(const void *data, size_t size, const char *label, sk_safetensors **out,
                      sk_err *e) {
    *out = NULL;
    const char *lbl = label ? label : "safetensors";
    const uint8_t *p = data;
    if (size < 8)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: %zu bytes, too short for a safetensors header",
                       lbl, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | p[i];
    if (hlen < 2 || hlen > SK_ST_MAX_HEADER)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: header length %llu is invalid (2..%llu)", lbl,
                       (unsigned long long)hlen, (unsigned long long)SK_ST_MAX_HEADER);
    if (hlen > size - 8)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%s: header length %llu exceeds the file (%zu bytes): truncated?", lbl,
                       (unsigned long long)hlen, size);
    const char *hdr = (const char *)p + 8;
    if (hdr[0] != '{')
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: header is not a JSON object (does not start with {)", lbl);
    if (!sk_utf8_valid(hdr, (size_t)hlen))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: header is not valid UTF-8", lbl);
    const char *endp = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &endp, 0);
    if (!root || !cJSON_IsObject(root)) {
        size_t at = endp && endp >= hdr ? (size_t)(endp - hdr) : 0;
        /* cJSON says NULL for both: a well-formed header means it ran out of memory */
        if (!root && sk_json_parse_failure(hdr, (size_t)hlen, CJSON_NESTING_LIMIT, &at) == SKYCMD_E_NOMEM)
            return sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory parsing the header", lbl);
        cJSON_Delete(root);
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: header is not a JSON object (near byte %zu)",
                       lbl, at + 8);
    }
    /* Only whitespace padding may follow the JSON object. */
    for (const char *q = endp; q && q < hdr + hlen; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            cJSON_Delete(root);
            return sk_fail(e, SKYCMD_E_FORMAT, "%s: trailing bytes after the JSON header (byte %zu)",
                           lbl, (size_t)(q - hdr) + 8);
        }
    uint64_t data_size = (uint64_t)size - 8 - hlen;
    const uint8_t *base = p + 8 + hlen;

    size_t cap = (size_t)cJSON_GetArraySize(root);
    sk_safetensors *st = calloc(1, sizeof *st);
    sk_st_tensor *ts = sk_calloc_array(cap ? cap : 1, sizeof *ts);
    if (!st || !ts) {
        free(st);
        free(ts);
        cJSON_Delete(root);
        return sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory", lbl);
    }
    st->tensors = ts;
    int status = SKYCMD_OK;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (!it->string) {
            status = sk_fail(e, SKYCMD_E_FORMAT, "%s: header entry without a name", lbl);
            break;
        }
        if (strcmp(it->string, "__metadata__") == 0) continue;
        if (it->string[0] == '\0') {
            status = sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor with an empty name", lbl);
            break;
        }
        sk_st_tensor *t = &ts[st->n];
        t->name = sk_strdup(it->string);
        if (!t->name) {
            status = sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory", lbl);
            break;
        }
        st->n++;
        status = parse_entry(it, t, data_size, lbl, e);
        if (status) break;
        t->data = base + t->offset;
    }
    cJSON_Delete(root);
    if (status == SKYCMD_OK && st->n > 1) {
        const sk_st_tensor **order = sk_malloc_array(st->n, sizeof *order);
        if (!order) {
            status = sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory", lbl);
        } else {
            for (size_t i = 0; i < st->n; i++) order[i] = &ts[i];
            qsort(order, st->n, sizeof *order, cmp_name);
            for (size_t i = 1; i < st->n && !status; i++)
                if (strcmp(order[i - 1]->name, order[i]->name) == 0)
                    status = sk_fail(e, SKYCMD_E_FORMAT, "%s: tensor \"%s\" appears twice", lbl,
                                     order[i]->name);
            if (!status) {
                qsort(order, st->n, sizeof *order, cmp_offset);
                for (size_t i = 1; i < st->n && !status; i++) {
                    const sk_st_tensor *a = order[i - 1], *b = order[i];
                    /* Empty tensors occupy no bytes and cannot overlap anything. */
                    if (a->nbytes && b->nbytes && b->offset < a->offset + a->nbytes)
                        status = sk_fail(e, SKYCMD_E_FORMAT,
                                         "%s: tensors \"%s\" and \"%s\" overlap (bytes %llu..%llu)",
                                         lbl, a->name, b->name, (unsigned long long)b->offset,
                                         (unsigned long long)(a->offset + a->nbytes));
                }
            }
            free(order);
        }
    }
    if (status) {
        sk_st_close(st);
        return status;
    }
    *out = st;
    return SKYCMD_OK;
}

void sk_st_release(const sk_safetensors *st, const sk_st_tensor *t) {
    if (st && st->mapped && t && t->data) sk_platform_map_discard(t->data, (size_t)t->nbytes);
}

int sk_st_open_file(const char *path, sk_safetensors **out, sk_err *e) {
    *out = NULL;
    sk_map m;
    int s = sk_map_file(path, &m, e);
    if (s) return s;
    sk_safetensors *st = NULL;
    s = sk_st_open_buffer(m.data, m.size, path, &st, e);
    if (s) {
        sk_unmap(&m);
        return s;
    }
    st->map = m;
    st->mapped = 1;
    *out = st;
    return SKYCMD_OK;
}

size_t sk_st_n_tensors(const sk_safetensors *st) { return st ? st->n : 0; }

const sk_st_tensor *sk_st_tensor_at(const sk_safetensors *st, size_t i) {
    return st && i < st->n ? &st->tensors[i] : NULL;
}

const sk_st_tensor *sk_st_find(const sk_safetensors *st, const char *name) {
    if (!st || !name) return NULL;
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

/* Local half-precision decoders so that the reader stands on its own. */
static float h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int sh = 0;
            while (!(man & 0x400u)) { man <<= 1; sh++; }
            man &= 0x3FFu;
            bits = sign | ((uint32_t)(127 - 15 + 1 - sh) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

int sk_st_to_f32(const sk_st_tensor *t, float *dst, sk_err *e) {
    if (!t->supported)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED,
                       "tensor \"%s\" has dtype %s; only F32, F16 and BF16 are supported",
                       t->name, t->dtype);
    const uint8_t *s = t->data;
    for (uint64_t i = 0; i < t->n_elements; i++) {
        switch (t->ggml_type) {
        case SK_GGML_F32: {
            uint32_t b = (uint32_t)s[4 * i] | (uint32_t)s[4 * i + 1] << 8 |
                         (uint32_t)s[4 * i + 2] << 16 | (uint32_t)s[4 * i + 3] << 24;
            memcpy(&dst[i], &b, 4);
            break;
        }
        case SK_GGML_F16:
            dst[i] = h2f((uint16_t)(s[2 * i] | s[2 * i + 1] << 8));
            break;
        default: { /* BF16 */
            uint32_t b = (uint32_t)(s[2 * i] | s[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &b, 4);
            break;
        }
        }
    }
    return SKYCMD_OK;
}

/* ---------------------------------------------------------------- writer ---------- */

typedef struct st_wt {
    char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t shape[SK_ST_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
} st_wt;

struct sk_st_writer {
    st_wt *t;
    size_t n, cap;
};

sk_st_writer *sk_st_writer_new(void) { return calloc(1, sizeof(sk_st_writer)); }

void sk_st_writer_free(sk_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    free(w->t);
    free(w);
}

static const char *type_name(uint32_t type) {
    switch (type) {
    case SK_GGML_F32: return "F32";
    case SK_GGML_F16: return "F16";
    case SK_GGML_BF16: return "BF16";
    default: return NULL;
    }
}

int sk_st_writer_add(sk_st_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                     const uint64_t *shape, const void *data, uint64_t nbytes, sk_err *e) {
    if (!w || !name || !name[0] || strcmp(name, "__metadata__") == 0 || !type_name(type) ||
        n_dims > SK_ST_MAX_DIMS)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "safetensors writer: bad tensor \"%s\"",
                       name ? name : "(null)");
    uint64_t count = 1;
    for (uint32_t i = 0; i < n_dims; i++)
        if (sk_mul_u64(count, shape[i], &count))
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "%s: shape overflows", name);
    uint64_t need;
    if (sk_mul_u64(count, type == SK_GGML_F32 ? 4 : 2, &need) || need != nbytes)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "%s: %llu bytes given for its shape", name,
                       (unsigned long long)nbytes);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "safetensors writer: \"%s\" added twice",
                           name);
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        st_wt *nt = realloc(w->t, nc * sizeof *nt);
        if (!nt) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
        w->t = nt;
        w->cap = nc;
    }
    st_wt *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = sk_strdup(name);
    if (!t->name) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t i = 0; i < n_dims; i++) t->shape[i] = shape[i];
    t->data = data;
    t->nbytes = nbytes;
    w->n++;
    return SKYCMD_OK;
}

/* JSON-escape a tensor name (names are plain ASCII in practice; escape anyway). */
static void put_json_str(sk_buf *b, const char *s) {
    sk_buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            sk_buf_putc(b, '\\');
            sk_buf_putc(b, (char)c);
        } else if (c < 0x20) {
            sk_buf_printf(b, "\\u%04x", c);
        } else {
            sk_buf_putc(b, (char)c);
        }
    }
    sk_buf_putc(b, '"');
}

static int build_header(sk_st_writer *w, sk_buf *h, uint64_t *data_size, sk_err *e) {
    sk_buf_init(h);
    sk_buf_puts(h, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        st_wt *t = &w->t[i];
        sk_buf_putc(h, ',');
        put_json_str(h, t->name);
        sk_buf_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", type_name(t->type));
        for (uint32_t d = 0; d < t->n_dims; d++)
            sk_buf_printf(h, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
        sk_buf_printf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                      (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
    }
    sk_buf_putc(h, '}');
    while (h->len % 8) sk_buf_putc(h, ' '); /* pad so that the data starts 8-byte aligned */
    if (h->failed) {
        sk_buf_free(h);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    *data_size = off;
    return SKYCMD_OK;
}

int sk_st_writer_write_mem(sk_st_writer *w, uint8_t **out, size_t *size, sk_err *e) {
    *out = NULL;
    *size = 0;
    sk_buf h;
    uint64_t ds;
    int s = build_header(w, &h, &ds, e);
    if (s) return s;
    size_t total;
    if (sk_add_size(8 + h.len, (size_t)ds, &total) || (uint64_t)(size_t)ds != ds) {
        sk_buf_free(&h);
        return sk_fail(e, SKYCMD_E_TOO_LARGE, "safetensors: too large for memory");
    }
    uint8_t *buf = malloc(total);
    if (!buf) {
        sk_buf_free(&h);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    uint64_t hl = h.len;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8, h.data, h.len);
    size_t p = 8 + h.len;
    for (size_t i = 0; i < w->n; i++) {
        if (w->t[i].nbytes && w->t[i].data)
            memcpy(buf + p, w->t[i].data, (size_t)w->t[i].nbytes);
        else if (w->t[i].nbytes)
            memset(buf + p, 0, (size_t)w->t[i].nbytes);
        p += (size_t)w->t[i].nbytes;
    }
    sk_buf_free(&h);
    *out = buf;
    *size = total;
    return SKYCMD_OK;
}

int sk_st_writer_write(sk_st_writer *w, const char *path, sk_err *e) {
    sk_buf h;
    uint64_t ds;
    int s = build_header(w, &h, &ds, e);
    if (s) return s;
    sk_atomic_file f;
    s = sk_atomic_open(&f, path, e);
    if (s) {
        sk_buf_free(&h);
        return s;
    }
    uint8_t len8[8];
    uint64_t hl = h.len;
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(hl >> (8 * i));
    s = sk_atomic_write(&f, len8, 8, e);
    if (!s) s = sk_atomic_write(&f, h.data, h.len, e);
    for (size_t i = 0; i < w->n && !s; i++) {
        if (!w->t[i].data && w->t[i].nbytes) {
            s = sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "%s: no data", w->t[i].name);
            break;
        }
        s = sk_atomic_write(&f, w->t[i].data, (size_t)w->t[i].nbytes, e);
    }
    sk_buf_free(&h);
    return sk_atomic_close(&f, s, e);
}
