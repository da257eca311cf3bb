/*
 * fuzz_decide_batch.c - libFuzzer target for the batch file of `skycmd decide --batch
 * IN.jsonl` (src/cli/cmd_decide_batch.c): its own line reader (read_line: fgets pieces,
 * '\r\n', over-long lines), the blank-line rule, the sort by length and each group's per-line
 * skycmd_request_parse, exactly as the command runs them (the file is included here so that
 * its static functions are the ones under test). The decision has no session: every parsed
 * line fails with SKYCMD_E_MISUSE, so only the reading and parsing are under test.
 *
 * Input: the JSONL file. Checks besides "no crash, no leak, no UB": every non-blank line is
 * a slot with its line number, in order, holding every byte of the line but its '\n' (NULs
 * included); every slot ends failed with a message and an output line that is JSON.
 */
#include "cli/cmd_decide_batch.c"
#include "cli/progress_meter.c" /* the meter cmd_decide_batch.c draws with */

/* cli_util.c's signal flag, which the meter reads: no signal arrives in a fuzz run */
int cli_stopping(void) { return 0; }
/* and its record of a closed stdin: the fuzz input is a file */
int cli_stdin_closed(const char *cmd) { (void)cmd; return 0; }

#include <cJSON.h>

#define FZ_WINDOW 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *in = fmemopen((void *)(uintptr_t)data, size ? size : 1, "r");
    if (!in) return 0;
    if (!size) (void)fgetc(in); /* an empty file */
    struct batch_run b;
    memset(&b, 0, sizeof b);
    cli_batch_args a;
    memset(&a, 0, sizeof a);
    b.a = &a;
    b.cmd = "decide";
    struct slot slots[FZ_WINDOW];
    size_t order[FZ_WINDOW];
    memset(slots, 0, sizeof slots);
    b.slots = slots;
    b.order = order;
    uint64_t line = 0, last = 0;
    int eof = 0;
    while (!eof) {
        size_t n = 0;
        while (n < FZ_WINDOW) {
            struct slot *sl = &slots[n];
            int r = read_line(in, sl);
            if (r < 0) __builtin_trap(); /* fmemopen does not fail */
            if (r == 0) {
                eof = 1;
                break;
            }
            line++;
            if (r == 1 && blank(sl)) continue;
            /* a line keeps every byte but its '\n' (a NUL too: read_line's contract), and
             * is terminated */
            if (r == 1 && (!sl->text || sl->text[sl->len] != '\0' || memchr(sl->text, '\n', sl->len)))
                __builtin_trap();
            sl->line = line;
            if (sl->line <= last) __builtin_trap();
            last = sl->line;
            sl->failed = 0;
            order[n] = n;
            n++;
        }
        if (!n) break;
        g_sort_slots = slots;
        qsort(order, n, sizeof *order, by_length);
        b.n_slots = n;
        for (size_t g = 0; g * BATCH_GROUP < n; g++) answer_group(&b, NULL, g);
        for (size_t i = 0; i < n; i++) {
            if (!slots[i].failed || !slots[i].msg || !slots[i].out) __builtin_trap();
            cJSON *j = cJSON_Parse(slots[i].out); /* the output line: an error object */
            if (!j) __builtin_trap();
            cJSON_Delete(j);
            free(slots[i].msg);
            free(slots[i].out);
            slots[i].msg = slots[i].out = NULL;
        }
    }
    for (size_t i = 0; i < FZ_WINDOW; i++) free(slots[i].text);
    fclose(in);
    return 0;
}
