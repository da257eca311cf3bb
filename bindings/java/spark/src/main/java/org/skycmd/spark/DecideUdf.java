package org.skycmd.spark;

import java.nio.file.Path;

import org.apache.spark.SparkEnv;
import org.apache.spark.sql.api.java.UDF2;
import org.skycmd.Model;
import org.skycmd.Options;
import org.skycmd.SkycmdException;

/**
 * A Spark SQL function for Scala and Java pipelines: {@code skycmd_decide(state, questions)}
 * answers one row with the Java binding's {@link Model}, as {@code skycmd decide} would: the
 * response's JSON text, or, for a row that cannot be answered, {@code {"error": {"status":
 * ..., "message": ...}}} (the line {@code skycmd decide --batch} writes for it), so one bad
 * row never fails the task. Read it with {@code from_json}.
 *
 * <pre>
 *   spark.udf().register("skycmd_decide", new DecideUdf(), DataTypes.StringType);
 *   df.selectExpr("id", "skycmd_decide(state, '{\"action\": {...}}') AS answer");
 * </pre>
 *
 * <p>{@code state} is a string column (or JSON text of an object/array: give it with
 * {@code to_json(struct)} and {@code stateIsJson}); {@code questions} the request's
 * "questions" object as JSON text. The model: the Spark conf {@code spark.skycmd.model} (a
 * GGUF path every executor can read; {@code SparkFiles.get(name)} for a file shipped with
 * {@code --files}) or, without it, the built-in model; opened once per executor JVM with
 * {@code spark.task.cpus} compute threads, shared by the executor's tasks.
 */
public final class DecideUdf implements UDF2<String, String, String> {
    private static final long serialVersionUID = 1L;
    private static final Object LOCK = new Object();
    private static volatile Model model;

    private final boolean stateIsJson;

    /** A string state, sent as a JSON string. */
    public DecideUdf() { this(false); }

    /** stateIsJson: the state column holds JSON text (an object or array), sent as it is. */
    public DecideUdf(boolean stateIsJson) { this.stateIsJson = stateIsJson; }

    @Override
    public String call(String state, String questions) {
        if (state == null) return error("SKYCMD_E_REQUEST", "the state is null");
        if (questions == null) return error("SKYCMD_E_REQUEST", "the questions are null");
        String request = "{\"state\":" + (stateIsJson ? state : quote(state)) + ",\"questions\":" + questions + "}";
        try {
            return model().decide(request).json();
        } catch (SkycmdException e) {
            return error(e.code(), e.libraryMessage());
        }
    }

    /** The executor's model, opened on first use. */
    static Model model() {
        Model m = model;
        if (m != null) return m;
        synchronized (LOCK) {
            if (model == null) {
                SparkEnv env = SparkEnv.get();
                String path = env == null ? null : env.conf().get("spark.skycmd.model", null);
                int threads = env == null ? 1 : Math.max(1, env.conf().getInt("spark.task.cpus", 1));
                Options options = new Options().threads(threads);
                model = path == null ? Model.openDefault(options) : Model.open(Path.of(path), options);
            }
            return model;
        }
    }

    private static String error(String status, String message) {
        return "{\"error\":{\"status\":" + quote(status) + ",\"message\":" + quote(message == null ? "" : message) + "}}";
    }

    /** A JSON string literal (RFC 8259: quote, backslash and control characters escaped). */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
