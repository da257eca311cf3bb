package org.skycmd;

import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;
import org.skycmd.internal.SkyTokenizer;
import org.skycmd.internal.skycmd_special;

/**
 * A byte-level BPE tokenizer: the one of an open {@link Model} ({@link Model#tokenizer()}) or
 * one loaded from a Hugging Face {@code tokenizer.json} ({@link #open(Path)}). Encoding gives
 * the ids Hugging Face {@code tokenizers} gives without special tokens. Thread-safe (calls on
 * one tokenizer are serialized).
 *
 * <p>A model's tokenizer belongs to the model: {@link #close()} on it does nothing, and it
 * throws {@link Status#MISUSE} once the model is closed. A loaded tokenizer is freed by
 * {@link #close()} (or, as a safety net, by a {@link Cleaner}).
 */
public final class Tokenizer implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The special tokens a tokenizer may define (skycmd_special). */
    public enum Special {
        CLS(skycmd_special.SKYCMD_SPECIAL_CLS), SEP(skycmd_special.SKYCMD_SPECIAL_SEP),
        MASK(skycmd_special.SKYCMD_SPECIAL_MASK), PAD(skycmd_special.SKYCMD_SPECIAL_PAD),
        UNK(skycmd_special.SKYCMD_SPECIAL_UNK);
        final int code;
        Special(skycmd_special s) { code = s.swigValue(); }
    }

    /** The box of a loaded tokenizer, reachable from the Cleaner without the Tokenizer. */
    private static final class Owned implements Runnable {
        SkyTokenizer box;

        @Override
        public synchronized void run() {
            if (box != null) {
                box.close();
                box.delete();
                box = null;
            }
        }
    }

    private final Model model; // the lender, or null for a loaded tokenizer
    private final Owned owned;
    private final Cleaner.Cleanable cleanable;

    Tokenizer(Model model) {
        this.model = model;
        this.owned = null;
        this.cleanable = null;
    }

    private Tokenizer(SkyTokenizer box) {
        this.model = null;
        this.owned = new Owned();
        this.owned.box = box;
        this.cleanable = CLEANER.register(this, owned);
    }

    /**
     * Loads a Hugging Face tokenizer.json (byte-level BPE). A file that does not exist throws
     * {@link Status#IO} with a {@link java.nio.file.NoSuchFileException} cause
     * ({@link SkycmdException#fileNotFound()}), as {@link Model#open(Path)} does.
     */
    public static Tokenizer open(Path tokenizerJson) {
        Skycmd.ensureUsable();
        SkyTokenizer box = new SkyTokenizer();
        int st = box.openJson(tokenizerJson.toString());
        if (st != 0) {
            SkycmdException e = new SkycmdException("tokenizer open", st, box.message(), box.osError(),
                                                    tokenizerJson.toString(), box.fileNotFound());
            box.delete();
            throw e;
        }
        return new Tokenizer(box);
    }

    /** Runs {@code f} on the native box, one call at a time. */
    private <T> T with(String op, Function<SkyTokenizer, T> f) {
        if (model != null) return model.withTokenizer(op, f);
        synchronized (owned) {
            if (owned.box == null) throw new SkycmdException(op, Status.MISUSE.code(), "tokenizer is closed");
            return f.apply(owned.box);
        }
    }

    private static void check(String op, SkyTokenizer t, int st) {
        if (st != 0) throw new SkycmdException(op, st, t.message());
    }

    /** The token ids of UTF-8 text, as HF tokenizers encodes it with add_special_tokens=False. */
    public int[] encode(String text) {
        return with("tokenizer encode", t -> {
            check("tokenizer encode", t, t.encode(Options.noNul("text", text)));
            int[] ids = new int[(int) t.idCount()];
            for (int i = 0; i < ids.length; i++) ids[i] = t.tokenId(i);
            return ids;
        });
    }

    /** The number of tokens of {@code text} (what {@link #encode} would return, not kept). */
    public int count(String text) {
        return with("tokenizer count", t -> {
            check("tokenizer count", t, t.count(Options.noNul("text", text)));
            return (int) t.tokenCount();
        });
    }

    /** The text of a list of ids. */
    public String decode(int[] ids) {
        return with("tokenizer decode", t -> {
            t.clearIds();
            for (int id : ids) check("tokenizer decode", t, t.appendId(id));
            check("tokenizer decode", t, t.decode());
            return t.decodedText();
        });
    }

    /** The vocabulary entry of an id in its byte-level form (e.g. "Ġthe"), if the id exists. */
    public Optional<String> token(int id) {
        return with("tokenizer token", t -> {
            if (id < 0 || id >= t.vocabSize()) return Optional.<String>empty();
            return Optional.of(t.token(id));
        });
    }

    /** The number of entries of the vocabulary. */
    public int vocabSize() {
        return with("tokenizer vocab size", t -> (int) t.vocabSize());
    }

    /** The id of a special token, if the tokenizer has it. */
    public OptionalInt specialId(Special which) {
        return with("tokenizer special id", t -> {
            int id = t.specialId(which.code);
            return id < 0 ? OptionalInt.empty() : OptionalInt.of(id);
        });
    }

    /** Frees a loaded tokenizer (twice is fine); does nothing for a model's tokenizer. */
    @Override
    public void close() {
        if (cleanable != null) cleanable.clean();
    }
}
