/*
 * json_syntax.h - a JSON syntax check that allocates nothing, to tell why a cJSON parse
 * returned NULL: cJSON gives NULL both for text that is not JSON and for an allocation that
 * failed. Text this check accepts, cJSON's parser accepts too (the check is a strict subset
 * of cJSON 1.7's grammar: RFC 8259 values, numbers of at most 63 characters, \u escapes of
 * four hex digits with cJSON's surrogate rules, at most max_depth nested arrays and
 * objects), so a NULL from cJSON on such text can only be an allocation failure.
 *
 * It reads no global state and may run in any number of threads at once (unlike
 * cJSON_GetErrorPtr or allocator hooks, which cJSON keeps process-wide).
 */
#ifndef SK_JSON_SYNTAX_H
#define SK_JSON_SYNTAX_H

#include <stddef.h>

/* 1 when text[0..len) starts, after an optional UTF-8 BOM and whitespace (as cJSON skips
 * them: bytes <= 0x20), with a well-formed JSON value of at most max_depth nested
 * containers; what follows that value is not looked at (cJSON_ParseWithLength ignores it
 * too). 0 otherwise, with *err_at (may be NULL) the offset of the first byte in error. */
int sk_json_well_formed(const char *text, size_t len, size_t max_depth, size_t *err_at);

/* The status for a cJSON parse of text[0..len) that returned NULL: SKYCMD_E_NOMEM when the
 * text is well formed (the parser can only have failed to allocate), else SKYCMD_E_FORMAT;
 * *err_at (may be NULL): where the text is wrong (0 for NOMEM). max_depth: the parser's
 * nesting limit (CJSON_NESTING_LIMIT). */
int sk_json_parse_failure(const char *text, size_t len, size_t max_depth, size_t *err_at);

#endif /* SK_JSON_SYNTAX_H */
