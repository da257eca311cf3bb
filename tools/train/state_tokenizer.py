"""A byte-level BPE tokenizer of the s1-pico shape (1,024 ids) trained on the Flappy Drone
state language, so that every whole number a state can hold (` 47`, `-` `6`) and every field
name (` dx`, ` nxt`, ` alt`) is one token.

Why: the random s1-pico vocabulary (`skycmd random s1-pico`) is trained on generic text; it
splits ` 47` into ` 4` `7` and ` alt` into ` a` `l` `t`, so a 64-wide, 2-layer encoder has
to assemble each number from digits before it can compare it with another. With one token
per number each number's embedding can carry its value directly.

The shape is what libskycmd's tokenizer reads (docs/compat.md): NFC normalizer, ByteLevel
pre-tokenizer (GPT-2 split, add_prefix_space false), BPE with the 256 byte tokens as its
alphabet (any text still tokenizes), ByteLevel decoder, the [CLS] A [SEP] post-processor and
the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] at ids 0-4 as in the random s1-pico.
The corpus is deterministic: every number from -70 to 70 in every field, the sets'
states, the instructions and option texts of tools/train/flappy.py, and the text laya's
prompt adds (`choice question:`, `level 0:`, `yes, the statement holds`, ...).
"""
from __future__ import annotations

import json
import os
from typing import Iterable, List

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
FIELDS = ("vy", "dx", "up", "dn", "nxt", "alt")


def corpus(states: Iterable[str], texts: Iterable[str]) -> List[str]:
    lines = []
    for v in range(-70, 71):  # every number in every field, so none is left to digits
        lines.append(" ".join("%s %d" % (f, v) for f in FIELDS))
    lines.extend(states)
    for t in texts:
        lines.extend([t] * 50)  # the prompt's words weigh like the states' words
    return lines


def prompt_texts(questions_list) -> List[str]:
    """The text laya puts around the state for these questions (laya.common.build_head)."""
    out = []
    for qs in questions_list:
        for q in qs.values():
            out.append("%s question: %s" % (q["type"], q["instructions"]))
            if q["type"] == "choice":
                out += [" %s: %s" % (k, v) for k, v in q["criteria"].items()]
            elif q["type"] == "score":
                out += [" level %d: %s" % (i, c) for i, c in enumerate(q["criteria"])]
            else:
                out += [" false: no, the statement does not hold", " true: yes, the statement holds"]
    return out


def train_tokenizer(lines: List[str], vocab_size: int, out_dir: str) -> None:
    """Write tokenizer.json and tokenizer_config.json into out_dir (replacing them)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    from tokenizers import AddedToken
    specials = [AddedToken(s, special=True, normalized=False, lstrip=(s == "[MASK]")) for s in SPECIALS]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(lines, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    cfg_path = os.path.join(out_dir, "tokenizer_config.json")
    with open(cfg_path, encoding="utf-8") as f:  # keep the random checkpoint's config (special names)
        cfg = json.load(f)
    cfg.pop("added_tokens_decoder", None)
    with open(cfg_path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
