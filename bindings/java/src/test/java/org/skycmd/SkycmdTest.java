package org.skycmd;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.skycmd.internal.skycmd_status;

/**
 * Tests against a random s1-pico model: $SKYCMD_TEST_MODEL, or one made through
 * Skycmd.randomModel. If the library cannot make one (UNSUPPORTED), model tests are skipped
 * unless SKYCMD_REQUIRE_MODEL=1 (set by run-tests.sh).
 */
class SkycmdTest {
    static Path tmp;
    static Path model;
    static SkycmdException modelError;

    @BeforeAll
    static void setUp() throws IOException {
        tmp = Files.createTempDirectory("skycmd-java-test-");
        String env = System.getenv("SKYCMD_TEST_MODEL");
        if (env != null && !env.isEmpty()) {
            model = Paths.get(env);
            return;
        }
        model = tmp.resolve("s1-pico.gguf");
        try {
            Skycmd.randomModel("s1-pico", model, null);
        } catch (SkycmdException e) {
            modelError = e;
        }
    }

    @AfterAll
    static void tearDown() throws IOException {
        try (var s = Files.walk(tmp)) {
            s.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
        }
    }

    static Path model() {
        if (modelError != null) {
            boolean require = "1".equals(System.getenv("SKYCMD_REQUIRE_MODEL"));
            if (!require) assumeTrue(modelError.status() != Status.UNSUPPORTED, "no random model yet: " + modelError.getMessage());
            throw modelError;
        }
        return model;
    }

    static String request() throws IOException {
        String p = System.getenv("SKYCMD_EXAMPLE_REQUEST");
        Path path = p != null && !p.isEmpty() ? Paths.get(p) : Paths.get("..", "..", "examples", "flappy-drone.json");
        return Files.readString(path, StandardCharsets.UTF_8);
    }

    @Test
    void statusValuesMatchHeader() {
        for (Status s : Status.values()) {
            if (s == Status.UNKNOWN) continue;
            assertEquals(s.code(), skycmd_status.swigToEnum(s.code()).swigValue());
            assertEquals("SKYCMD_" + (s == Status.OK ? "OK" : "E_" + s.name()), s.cName());
        }
        assertEquals("SKYCMD_E_CANCELLED", skycmd_status.swigToEnum(14).toString());
    }

    @Test
    void versionCheck() {
        assertTrue(Skycmd.HEADER_VERSION_NUMBER > 0);
        assertNull(Skycmd.loadError, "binding refuses its own library");
        Skycmd.checkVersion(Skycmd.HEADER_VERSION_NUMBER);
        assertTrue(Skycmd.versionNumber() >= Skycmd.HEADER_VERSION_NUMBER);
        for (long newer : new long[] {Skycmd.versionNumber() + 1, Skycmd.versionNumber() + 100, Skycmd.versionNumber() + 10000}) {
            SkycmdException e = assertThrows(SkycmdException.class, () -> Skycmd.checkVersion(newer));
            assertEquals(Status.VERSION, e.status());
            assertFalse(e.libraryMessage().isEmpty());
        }
        // Simulate a library older than the header: every entry point refuses.
        SkycmdException saved = Skycmd.loadError;
        try {
            Skycmd.loadError = new SkycmdException("check version", Status.VERSION.code(), "simulated old library");
            assertEquals(Status.VERSION, assertThrows(SkycmdException.class, () -> Model.open(tmp.resolve("x.gguf"))).status());
            assertEquals(Status.VERSION, assertThrows(SkycmdException.class,
                    () -> Skycmd.randomModel("s1-pico", tmp.resolve("x.gguf"), null)).status());
        } finally {
            Skycmd.loadError = saved;
        }
    }

    static void checkAnswers(Response r) {
        assertEquals(3, r.answers().size(), r.json());
        assertTrue(r.inputTokens() > 0);
        String[] ids = {"action", "danger", "margin"};
        AnswerType[] types = {AnswerType.CHOICE, AnswerType.NOUL, AnswerType.SCORE};
        for (int i = 0; i < 3; i++) {
            Answer a = r.answers().get(i);
            assertEquals(ids[i], a.id());
            assertEquals(types[i], a.type());
            double sum = 0;
            for (Probability p : a.probabilities()) {
                assertTrue(p.p() >= 0 && p.p() <= 1);
                sum += p.p();
            }
            assertEquals(1.0, sum, 1e-6);
        }
        Answer act = r.answer("action").orElseThrow();
        assertEquals(List.of("thrust", "glide"), act.probabilities().stream().map(Probability::key).toList());
        Probability best = act.probabilities().get(0).p() >= act.probabilities().get(1).p()
                ? act.probabilities().get(0) : act.probabilities().get(1);
        assertEquals(best.key(), act.choice());
        assertEquals(best.p(), act.value());
        assertTrue(act.confidence().isPresent());
        assertFalse(Double.isNaN(act.confidence().getAsDouble()));
        Answer dn = r.answer("danger").orElseThrow();
        assertEquals(List.of("false", "true"), dn.probabilities().stream().map(Probability::key).toList());
        assertEquals(dn.probabilities().get(1).p(), dn.value());
        assertTrue(dn.confidence().isEmpty());
        assertNull(dn.choice());
        Answer mg = r.answer("margin").orElseThrow();
        assertEquals(3, mg.probabilities().size());
        double exp = 0;
        for (int i = 0; i < 3; i++) {
            assertEquals(Integer.toString(i), mg.probabilities().get(i).key());
            exp += i * mg.probabilities().get(i).p();
        }
        assertEquals(exp, mg.value(), 1e-9);
        assertTrue(mg.confidence().isPresent());
        assertTrue(r.json().contains("\"answers\"") && r.json().contains("\"" + act.choice() + "\""));
    }

    /** The cross-check form: every double as the 16 hex digits of its bits. */
    static String dump(Response r) {
        StringBuilder b = new StringBuilder();
        b.append("input_tokens ").append(r.inputTokens()).append('\n');
        for (Answer a : r.answers()) {
            b.append("answer ").append(a.id()).append(' ').append(a.type().name().toLowerCase())
             .append(" choice=").append(a.choice() == null ? "" : a.choice())
             .append(" value=").append(bits(a.value())).append(" confidence=").append(bits(a.confidence())).append('\n');
            for (Probability p : a.probabilities()) b.append("option ").append(p.key()).append(' ').append(bits(p.p())).append('\n');
        }
        return b.toString();
    }

    static String bits(double v) { return String.format("%016x", Double.doubleToRawLongBits(v)); }

    static String bits(OptionalDouble v) { return v.isPresent() ? bits(v.getAsDouble()) : "none"; }

    @Test
    void exampleRequestAnswered() throws IOException {
        Path m = model();
        String req = request();
        try (Model mod = Model.open(m)) {
            Response r = mod.decide(req);
            checkAnswers(r);
            assertTrue(mod.intParameter("decision.max_head_tokens") > 0);
            assertEquals(Status.NOT_FOUND, assertThrows(SkycmdException.class, () -> mod.intParameter("no.such.key")).status());
            assertEquals(dump(r), dump(mod.decide(req)));
            String dir = System.getenv("SKYCMD_DUMP_DIR");
            if (dir != null && !dir.isEmpty()) Files.writeString(Paths.get(dir, "java.txt"), dump(r));
        }
    }

    @Test
    void errors() throws IOException {
        SkycmdException e = assertThrows(SkycmdException.class, () -> Model.open(tmp.resolve("does-not-exist.gguf")));
        assertEquals(Status.IO, e.status());
        assertTrue(e.libraryMessage().contains("does-not-exist"), e.getMessage());
        Path junk = tmp.resolve("junk.gguf");
        Files.writeString(junk, "this is not a gguf file at all");
        assertEquals(Status.FORMAT, assertThrows(SkycmdException.class, () -> Model.open(junk)).status());
        assertEquals(Status.IO, assertThrows(SkycmdException.class, () -> Skycmd.inspect(tmp.resolve("nope.gguf"), null)).status());

        Model mod = Model.open(model());
        e = assertThrows(SkycmdException.class, () -> mod.decide("{\"state\": \"x\", \"questions\": {"));
        assertEquals(Status.JSON, e.status());
        assertFalse(e.libraryMessage().isEmpty());
        e = assertThrows(SkycmdException.class, () -> mod.decide(
                "{\"state\": \"x\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"?\", \"criteria\": {}}}}"));
        assertEquals(Status.REQUEST, e.status());
        assertTrue(e.libraryMessage().contains("criteria"), e.getMessage());
        mod.close();
        mod.close();
        assertTrue(mod.isClosed());
        String req = request();
        assertEquals(Status.MISUSE, assertThrows(SkycmdException.class, () -> mod.decide(req)).status());
        assertThrows(SkycmdException.class, () -> Skycmd.randomModel("no-such-preset", tmp.resolve("p.gguf"), null));
        assertThrows(SkycmdException.class, () -> Skycmd.convert(tmp.resolve("no-such-dir"), tmp.resolve("c.gguf"), null));
        assertFalse(Files.exists(tmp.resolve("c.gguf")));
    }

    @Test
    void inspectAndQuantize() throws IOException {
        Path m = model();
        assertTrue(Skycmd.inspect(m, null).contains("modern-bert"));
        String js = Skycmd.inspect(m, new Options().json(true)).trim();
        assertTrue(js.startsWith("{") && js.endsWith("}"), js);
        Path q = tmp.resolve("q8.gguf");
        Skycmd.quantize(m, q, new Options().type(Options.Type.Q8_0));
        try (Model mod = Model.open(q)) {
            checkAnswers(mod.decide(request()));
        }
        Path seeded = tmp.resolve("seeded.gguf");
        Skycmd.randomModel("s1-pico", seeded, new Options().seed(7));
        assertTrue(Files.size(seeded) > 0);
    }

    @Test
    void concurrentDecide() throws Exception {
        String req = request();
        try (Model mod = Model.open(model())) {
            String want = dump(mod.decide(req));
            ExecutorService pool = Executors.newFixedThreadPool(8);
            List<Future<String>> fs = new ArrayList<>();
            for (int i = 0; i < 80; i++) fs.add(pool.submit(() -> dump(mod.decide(req))));
            for (Future<String> f : fs) assertEquals(want, f.get());
            pool.shutdown();
        }
    }

    static long rssKiB() throws IOException {
        String[] f = Files.readString(Paths.get("/proc/self/statm")).trim().split("\\s+");
        return Long.parseLong(f[1]) * 4;
    }

    /**
     * Leak check. Exact at the handle level: every model opened in the loop (every tenth one
     * dropped unclosed, for the Cleaner) is freed again. At the process level: RSS between
     * round 300 and round 600 must not grow by 32 MiB (a leaked model, ~1.5 MB, per round
     * would be ~450 MiB); the JVM's own heap growth makes a tighter RSS bound meaningless.
     */
    @Test
    void openDecideCloseLoop() throws Exception {
        Path m = model();
        String req = request();
        int live0 = Model.liveNativeModels();
        long rss300 = 0;
        for (int i = 0; i < 600; i++) {
            if (i % 10 == 0) {
                Model.open(m).decide(req); // left for the Cleaner
            } else {
                try (Model mod = Model.open(m)) { mod.decide(req); }
            }
            if (i == 299) {
                System.gc();
                rss300 = rssKiB();
            }
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (Model.liveNativeModels() > live0 && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        long rss600 = rssKiB();
        System.out.println("java loop: live native models " + Model.liveNativeModels() + " (before " + live0
                + "); RSS after 300 rounds " + rss300 + " KiB, after 600 " + rss600 + " KiB, growth " + (rss600 - rss300) + " KiB");
        assertEquals(live0, Model.liveNativeModels(), "native models leaked");
        assertTrue(rss600 - rss300 < 32768, "RSS grew by " + (rss600 - rss300) + " KiB");
    }

    static Path nativeLibrary() throws Exception {
        Path classes = Paths.get(NativeLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        return classes.resolve(NativeLoader.RESOURCE.substring(1));
    }

    /** The jar path of NativeLoader: the one native library extracts from a jar. */
    @Test
    void nativeLibraryExtractsFromAJar() throws Exception {
        Path lib = nativeLibrary();
        Path jar = tmp.resolve("native.jar");
        try (OutputStream os = Files.newOutputStream(jar); JarOutputStream jos = new JarOutputStream(os)) {
            jos.putNextEntry(new JarEntry(NativeLoader.RESOURCE.substring(1)));
            jos.write(Files.readAllBytes(lib));
            jos.closeEntry();
        }
        try (var cl = new URLClassLoader(new URL[] {jar.toUri().toURL()}, null) {
                Class<?> define() throws Exception {
                    Path classes = lib.getParent().getParent().getParent();
                    byte[] b = Files.readAllBytes(classes.resolve("org/skycmd/Probability.class"));
                    return defineClass("org.skycmd.Probability", b, 0, b.length);
                }
            }) {
            assertEquals("jar", cl.getResource(NativeLoader.RESOURCE.substring(1)).getProtocol());
            // Run the extraction against a class whose resources come from the jar.
            Method extract = NativeLoader.class.getDeclaredMethod("extract", Class.class);
            extract.setAccessible(true);
            Path out = (Path) extract.invoke(null, cl.define());
            assertEquals("libskycmd_jni.so", out.getFileName().toString());
            assertArrayEquals(Files.readAllBytes(lib), Files.readAllBytes(out));
        }
    }

    /** The library is self-contained: its NEEDED entries are the C runtime only. */
    @Test
    void nativeLibraryNeedsOnlyTheCRuntime() throws Exception {
        Process p = new ProcessBuilder("readelf", "-d", nativeLibrary().toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        List<String> needed = new ArrayList<>();
        for (String line : out.split("\n")) {
            int a = line.indexOf("(NEEDED)");
            if (a >= 0) needed.add(line.substring(line.indexOf('[') + 1, line.indexOf(']')));
        }
        assertFalse(needed.isEmpty(), out);
        for (String n : needed) {
            assertTrue(n.matches("(libc|libm|libpthread|libdl|librt)\\.so\\.[0-9]+|ld-linux.*"), "unexpected NEEDED " + n + " in " + needed);
        }
        assertTrue(out.contains("NEEDED") && !out.contains("libskycmd") && !out.contains("cjson") && !out.contains("utf8proc"), out);
    }
}
