/*
 * safetensors.h - a zero-copy reader and a small writer for the safetensors format
 * (8-byte little-endian header length, a JSON header, then the raw tensor bytes).
 *
 * Contract:
 *  - The reader never copies tensor bytes: sk_st_tensor.data points into the mapping or the
 *    caller's buffer, which must outlive the reader. Names are NUL-terminated copies.
 *  - The file is hostile input. The header length, the JSON (depth and size), every dtype,
 *    shape and data_offsets pair are checked: offsets lie inside the data section, the byte
 *    count equals product(shape) * dtype size (overflow-checked), tensors do not overlap and
 *    names are unique. A damaged file is SKYCMD_E_FORMAT with a message naming the tensor
 *    and what is wrong; nothing aborts.
 *  - Every dtype of the format is recognised (so a file is fully bounds-checked), but only
 *    F32, F16 and BF16 can be converted to f32 (sk_st_to_f32); other dtypes are kept with
 *    `supported = 0` and the caller reports them.
 *  - `__metadata__` is ignored. Shapes are kept in PyTorch order (shape[0] outermost).
 *  - The writer writes F32/F16/BF16 tensors in the order added, 8-byte aligned header, the
 *    same layout the Python `safetensors` package reads; output is atomic (no partial file).
 */
#ifndef SK_SAFETENSORS_H
#define SK_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define SK_ST_MAX_DIMS 8
/* Largest accepted JSON header (the reference implementation uses 100 MB as well). */
#define SK_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct sk_st_tensor {
    char *name;
    char dtype[8];        /* "F32", "F16", "BF16", "I64", ... as written in the header */
    uint32_t ggml_type;   /* SK_GGML_F32/F16/BF16 when supported */
    int supported;        /* 1 for F32, F16, BF16 */
    uint32_t elem_size;   /* bytes per element (BOOL/U8/F8 = 1) */
    uint32_t n_dims;      /* 0 for a scalar */
    uint64_t shape[SK_ST_MAX_DIMS];
    uint64_t n_elements;
    uint64_t offset;      /* relative to the data section */
    uint64_t nbytes;
    const uint8_t *data;  /* borrowed */
} sk_st_tensor;

typedef struct sk_safetensors sk_safetensors;

/* `label` names the source in messages (e.g. the path); may be NULL. */
int sk_st_open_buffer(const void *data, size_t size, const char *label, sk_safetensors **out,
                      sk_err *e);
int sk_st_open_file(const char *path, sk_safetensors **out, sk_err *e);
void sk_st_close(sk_safetensors *st);

size_t sk_st_n_tensors(const sk_safetensors *st);
const sk_st_tensor *sk_st_tensor_at(const sk_safetensors *st, size_t i);
/* NULL when absent. */
const sk_st_tensor *sk_st_find(const sk_safetensors *st, const char *name);

/* Widen a supported tensor to f32 (dst holds n_elements floats). Unsupported dtypes give
 * SKYCMD_E_UNSUPPORTED naming the tensor and dtype. */
int sk_st_to_f32(const sk_st_tensor *t, float *dst, sk_err *e);
/* The caller has read t (of st) and will not read it again: when st maps a file, the whole
 * pages of t's bytes leave the resident set (they fault in from the file again if read); a
 * no-op for a buffer, whose memory is the caller's. */
void sk_st_release(const sk_safetensors *st, const sk_st_tensor *t);

/* ---- writer ---- */
typedef struct sk_st_writer sk_st_writer;

sk_st_writer *sk_st_writer_new(void);
void sk_st_writer_free(sk_st_writer *w);
/* `type` is SK_GGML_F32/F16/BF16; `data` is borrowed until the write (nbytes must equal
 * product(shape) * element size). Shape in PyTorch order. With write_mem, data may be NULL:
 * the bytes are zeroed, for the caller to fill in place (no second copy of a big model). */
int sk_st_writer_add(sk_st_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                     const uint64_t *shape, const void *data, uint64_t nbytes, sk_err *e);
int sk_st_writer_write_mem(sk_st_writer *w, uint8_t **out, size_t *size, sk_err *e);
int sk_st_writer_write(sk_st_writer *w, const char *path, sk_err *e);

#endif /* SK_SAFETENSORS_H */
