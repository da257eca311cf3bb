/*
 * request.h - a parsed and validated /v1/systemone body, with every text the prompt needs
 * already rendered the way the Python Laya runtime renders it.
 *
 * Validation follows llama-server's parse_questions (rules and wording, every question
 * message prefixed "questions.<id>: "), with the Laya runtime's leniencies: choice criteria
 * may be an array of labels, score criteria any non-empty array. Limits (body bytes, depth,
 * question count) give SKYCMD_E_TOO_LARGE; malformed JSON SKYCMD_E_JSON; anything else
 * SKYCMD_E_REQUEST (or SKYCMD_E_UNSUPPORTED for media). docs/compat.md lists every choice.
 *
 * Texts are stored BEFORE the "[MASK]" text is removed: that text belongs to the model's
 * tokenizer, so the decide step removes it (sk_prompt_unmask).
 */
#ifndef SK_REQUEST_H
#define SK_REQUEST_H

#include "../prompt/pyjson.h"
#include "gate.h"

#define SK_REQUEST_MAX_BYTES ((size_t)16 << 20)
#define SK_REQUEST_MAX_QUESTIONS 4096
#define SK_REQUEST_MAX_OPTIONS 255

typedef struct sk_roption {
    sk_jstr key;       /* answer key: choice key, "0".."n-1", "false"/"true" */
    sk_jstr text;      /* option text as render_options makes it */
    const sk_jv *desc; /* the request's description value (score legend), may be NULL */
} sk_roption;

typedef struct sk_rquestion {
    sk_jstr id;
    int type;           /* skycmd_qtype */
    sk_jstr ins;        /* instructions: the string, or json.dumps of the value */
    sk_roption *opts;
    size_t n_opts;
    /* "option_order" (laya Agent): slot s shows option order[s], the markers come in slot
     * order and the probabilities are put back in option order (unpermute_probs). NULL when
     * the question has none; slot_text[s] = opts[order[s]].text then. */
    uint16_t *order;
    sk_jstr *slot_text;
} sk_rquestion;

typedef struct sk_request {
    sk_jdoc doc;              /* owns every string below (its arena) */
    sk_jstr state;            /* the state text (string as-is, else json.dumps) */
    int state_is_list;        /* Python cuts list states from the left */
    sk_rquestion *q;
    size_t nq;
    size_t max_opts;          /* largest option count of any question */
    /* Opt-in controls of the body (engine/multipass.h; docs/compat.md "Long states, truncation,
     * tournaments"): a bit of ctl_set says the body gave the control (null = not given),
     * else the session's option applies. */
    unsigned ctl_set;         /* SK_CTL_* */
    int ctl_long, ctl_report_truncation;
    int64_t ctl_window, ctl_stride, ctl_tournament_group;
    /* "max_len" / "head_max_len" (laya serve's per-request budgets, _validate_budget_param):
     * positive JSON integers (saturated at INT64_MAX), their lexemes kept for the message of
     * the cap the session checks them against (SKYCMD_OPT_MAX_TOKEN_BUDGET). */
    int64_t ctl_max_len, ctl_head_max_len;
    sk_jstr ctl_max_len_text, ctl_head_max_len_text;
    sk_gate gate;             /* "min_confidence" (laya serve BODY_CONTROLS); unset if absent/null */
} sk_request;

enum { SK_CTL_LONG = 1, SK_CTL_WINDOW = 2, SK_CTL_STRIDE = 4, SK_CTL_REPORT_TRUNCATION = 8,
       SK_CTL_TOURNAMENT_GROUP = 16, SK_CTL_MAX_LEN = 32, SK_CTL_HEAD_MAX_LEN = 64 };
/* Largest window / stride a body or a session may ask for, and the tournament group range
 * (laya serve's LAYA_TOURNAMENT_GROUP: 2..MAX_CHOICE_OPTIONS = 100; 0 = off). */
#define SK_LONG_MAX_WINDOW ((int64_t)1 << 20)
#define SK_TOURNAMENT_MIN_GROUP 2
#define SK_TOURNAMENT_MAX_GROUP 100

extern const char *const sk_qtype_names[3];

int sk_request_parse(const char *json, size_t len, sk_request *r, sk_err *e);
void sk_request_free(sk_request *r);

/* How much of a question id a message shows: at most ~96 bytes, cut on a UTF-8 boundary. */
int sk_question_id_len(sk_jstr id);

#endif
