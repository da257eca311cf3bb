package org.skycmd;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

/**
 * Loads the JNI glue (libskycmd_jni.so) once, before the first native call.
 *
 * <p>Order: the system property {@code skycmd.jni.path} (a file); then the resource
 * {@code /native/linux-x86_64/libskycmd_jni.so} on the class path, loaded in place when it is
 * a plain file (a build tree's {@code target/classes}) or extracted with the bundled
 * libskycmd to a private temporary directory when it sits in a jar; last,
 * {@code System.loadLibrary("skycmd_jni")} through {@code java.library.path}.
 */
public final class NativeLoader {
    static final String DIR = "/native/linux-x86_64/";
    static final String GLUE = "libskycmd_jni.so";
    private static boolean loaded;

    private NativeLoader() {}

    /** Loads the glue; safe to call many times. Throws UnsatisfiedLinkError on failure. */
    public static synchronized void load() {
        if (loaded) return;
        String explicit = System.getProperty("skycmd.jni.path");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Paths.get(explicit).toAbsolutePath().toString());
        } else {
            URL url = NativeLoader.class.getResource(DIR + GLUE);
            if (url == null) {
                System.loadLibrary("skycmd_jni");
            } else if ("file".equals(url.getProtocol())) {
                try {
                    Path glue = Paths.get(url.toURI());
                    preloadBundled(glue.getParent());
                    System.load(glue.toString());
                } catch (URISyntaxException e) {
                    throw linkError("bad native path " + url, e);
                }
            } else {
                try {
                    Path dir = extract(NativeLoader.class);
                    preloadBundled(dir);
                    System.load(dir.resolve(GLUE).toString());
                } catch (IOException e) {
                    throw linkError("cannot extract the native library from " + url, e);
                }
            }
        }
        loaded = true;
    }

    /** Loads the bundled libskycmd.so.N (named in bundled.txt) so the glue's NEEDED entry
     *  resolves even without an rpath. */
    private static void preloadBundled(Path dir) {
        Path list = dir.resolve("bundled.txt");
        if (!Files.isRegularFile(list)) return;
        try {
            String soname = Files.readString(list, StandardCharsets.UTF_8).trim();
            Path lib = dir.resolve(soname);
            if (!soname.isEmpty() && Files.isRegularFile(lib)) System.load(lib.toString());
        } catch (IOException e) {
            throw linkError("cannot read " + list, e);
        }
    }

    /**
     * Copies the native files of {@code anchor}'s class path entry (glue, bundled.txt and
     * the bundled library) into a new temporary directory, deleted at exit; returns it.
     */
    static Path extract(Class<?> anchor) throws IOException {
        Path dir = Files.createTempDirectory("skycmd-jni-");
        dir.toFile().deleteOnExit();
        copyResource(anchor, "bundled.txt", dir);
        String soname = Files.isRegularFile(dir.resolve("bundled.txt"))
                ? Files.readString(dir.resolve("bundled.txt"), StandardCharsets.UTF_8).trim() : "";
        if (!soname.isEmpty()) copyResource(anchor, soname, dir);
        if (!copyResource(anchor, GLUE, dir)) throw new IOException("no " + DIR + GLUE + " resource");
        return dir;
    }

    private static boolean copyResource(Class<?> anchor, String name, Path dir) throws IOException {
        try (InputStream in = anchor.getResourceAsStream(DIR + name)) {
            if (in == null) return false;
            Path out = dir.resolve(name);
            Files.copy(in, out, StandardCopyOption.REPLACE_EXISTING);
            out.toFile().deleteOnExit();
            return true;
        }
    }

    private static UnsatisfiedLinkError linkError(String msg, Exception cause) {
        UnsatisfiedLinkError e = new UnsatisfiedLinkError(msg + ": " + cause.getMessage());
        e.initCause(cause);
        return e;
    }
}
