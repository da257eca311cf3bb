#!/usr/bin/env bash
# consumer-test.sh WORKDIR - the Java binding used the way a downstream Maven project uses it
# (contract: bindings/run-consumers.sh). Steps:
#   1. `mvn install` of bindings/java (docs/bindings.md; built outside the checkout with
#      -Dskycmd.build.directory) against the installed library: PKG_CONFIG_PATH names the
#      prefix, whose libskycmd.a is linked into the jar's one JNI library. No SWIG on PATH:
#      the SWIG output is committed.
#   2. A new Maven project in WORKDIR/app that depends on org.skycmd:skycmd:VERSION from the
#      local repository (~/.m2, or MAVEN_REPO_LOCAL), builds, and copies its dependencies.
#   3. The jar: one native library, a manifest with Automatic-Module-Name, and that library
#      stripped and NEEDing only the C runtime (readelf -d): no libskycmd, libcjson, utf8proc.
#   4. The example request answered with those libraries hidden from the loader: in a private
#      mount namespace (`unshare -m`, or `unshare -r -m` for a non-root user) an empty file is
#      bind-mounted over every libcjson.so*, libutf8proc.so* and libskycmd.so* the loader
#      could find (ldconfig's cache and the prefix). A control inside the namespace shows the
#      hiding works: the hidden files read as empty, and the prefix's libskycmd.so (what the
#      jar used to bundle) no longer loads (ldd: "file too short" or "not found"). There
#      `java -cp` runs the consumer, which opens the model with Model.openAsync, writes the
#      dump, runs a streaming batch (decideEach) with a bad request in it and opens the
#      built-in model (Model.openDefault, SKYCMD_DEFAULT_MODEL naming the prefix's); then again
#      with the jar on the module path as module org.skycmd (the same dump).
set -euo pipefail
work=$(realpath -m "${1:?usage: consumer-test.sh WORKDIR}")
repo=${SKYCMD_REPO:?}
: "${SKYCMD_PREFIX:?}" "${SKYCMD_CONSUMER_MODEL:?}" "${SKYCMD_CONSUMER_REQUEST:?}" "${SKYCMD_CONSUMER_DUMP:?}"
mkdir -p "$work"
mvn_flags=(-B -q -Dstyle.color=never)
[ -n "${MAVEN_REPO_LOCAL:-}" ] && mvn_flags+=("-Dmaven.repo.local=$MAVEN_REPO_LOCAL")
version=$(sed -n '/<artifactId>skycmd<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p;q}' "$repo/bindings/java/pom.xml")
[ -n "$version" ] || { echo "cannot read the binding's version from its pom.xml"; exit 1; }

echo "-- 1. mvn install of org.skycmd:skycmd:$version (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"
mvn "${mvn_flags[@]}" -f "$repo/bindings/java/pom.xml" -Dskycmd.build.directory="$work/binding-build" \
    -DskipTests install

echo "-- 2. a new Maven project depending on org.skycmd:skycmd:$version"
app=$work/app
mkdir -p "$app/src/main/java/example"
cat > "$app/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>skycmd-consumer</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.skycmd</groupId>
      <artifactId>skycmd</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
      <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.12.1</version></plugin>
      <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>
      <plugin><artifactId>maven-jar-plugin</artifactId><version>3.3.0</version></plugin>
      <plugin>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>3.6.1</version>
        <executions>
          <execution>
            <phase>package</phase>
            <goals><goal>copy-dependencies</goal></goals>
            <configuration><includeScope>runtime</includeScope></configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
EOF
cat > "$app/src/main/java/example/Main.java" <<'EOF'
package example;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalDouble;
import org.skycmd.Answer;
import org.skycmd.Model;
import org.skycmd.Probability;
import org.skycmd.Response;
import org.skycmd.Result;

/** Answers a request and writes the cross-check dump: every double as its 16 hex bits. */
public final class Main {
    static String bits(double v) { return String.format("%016x", Double.doubleToRawLongBits(v)); }

    static String bits(OptionalDouble v) { return v.isPresent() ? bits(v.getAsDouble()) : "none"; }

    public static void main(String[] args) throws Exception {
        String request = Files.readString(Path.of(args[1]), StandardCharsets.UTF_8);
        // Opened off this thread (a CompletableFuture; cancelling it would stop the load).
        try (Model model = Model.openAsync(Path.of(args[0])).get()) {
            Response r = model.decide(request);
            StringBuilder b = new StringBuilder("input_tokens " + r.inputTokens() + "\n");
            for (Answer a : r.answers().values()) {
                b.append("answer ").append(a.id()).append(' ').append(a.type().name().toLowerCase())
                 .append(" choice=").append(a.choice() == null ? "" : a.choice())
                 .append(" value=").append(bits(a.value()))
                 .append(" confidence=").append(bits(a.confidence())).append('\n');
                for (Probability p : a.probabilities()) b.append("option ").append(p.key()).append(' ').append(bits(p.p())).append('\n');
                System.out.println(a.id() + ": " + (a.choice() != null ? a.choice() + " " : "") + a.value());
            }
            Files.writeString(Path.of(args[2]), b.toString());
            // The streaming batch: a bad request is its own item's error; the stream goes on.
            List<Result> each = model.decideEach(List.of(request, "{bad", request)).toList();
            long answered = each.stream().filter(x -> x.isOk() && x.response().inputTokens() == r.inputTokens()).count();
            List<String> failed = each.stream().filter(x -> !x.isOk()).map(x -> x.error().orElseThrow().code()).toList();
            System.out.println("streaming batch: " + answered + " answered, failed " + failed);
        }
        // The built-in model (SKYCMD_DEFAULT_MODEL: the jar carries libskycmd, so it is not
        // found beside an installed library).
        try (Model builtIn = Model.openDefault()) {
            System.out.println("built-in model " + builtIn.name());
        }
    }
}
EOF
(cd "$app" && mvn "${mvn_flags[@]}" package)
jar=$app/target/dependency/skycmd-$version.jar
[ -f "$jar" ] || { echo "the dependency jar is missing: $jar"; exit 1; }
echo "   $jar ($(stat -c %s "$jar") bytes)"

echo "-- 3. the jar: one native library, Automatic-Module-Name, NEEDED only the C runtime"
natives=$(jar tf "$jar" | grep -E '\.so(\.|$)' || true)
[ "$natives" = "native/linux-$(uname -m)/libskycmd_jni.so" ] || { echo "native files in the jar: $natives"; exit 1; }
jar --describe-module --file "$jar" | tee "$work/module.txt"
grep -q "^org.skycmd@$version automatic" "$work/module.txt" || { echo "no Automatic-Module-Name org.skycmd"; exit 1; }
mkdir -p "$work/jar-native" && (cd "$work/jar-native" && jar xf "$jar" "native/linux-$(uname -m)/libskycmd_jni.so")
lib=$work/jar-native/native/linux-$(uname -m)/libskycmd_jni.so
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "   NEEDED: $(echo $needed)"
[ -n "$needed" ] || { echo "no NEEDED entries read"; exit 1; }
for n in $needed; do
    case "$n" in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
        *) echo "the jar's library needs $n"; exit 1 ;;
    esac
done
if readelf -S "$lib" | grep -q '\.symtab'; then echo "the jar's library is not stripped"; exit 1; fi
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^Java_' || true)
[ -z "$exported" ] || { echo "exports beyond JNI: $(echo $exported | head -c 300)"; exit 1; }
echo "   stripped; exports only Java_* ($(nm -D --defined-only "$lib" | wc -l) symbols)"

echo "-- 4. the example request with libcjson, libutf8proc and libskycmd hidden from the loader"
hide=()
while read -r f; do [ -n "$f" ] && hide+=("$f"); done < <(
    { ldconfig -p | awk '$1 ~ /^lib(cjson|utf8proc|skycmd)\.so/ {print $NF}'
      ls "$SKYCMD_PREFIX"/lib*/libskycmd.so* "$SKYCMD_PREFIX"/lib*/*/libskycmd.so* 2>/dev/null || true
    } | xargs -r -n1 readlink -f | sort -u)
[ ${#hide[@]} -gt 0 ] || { echo "found no library to hide"; exit 1; }
# The control: a copy of the prefix's libskycmd.so (the file the jar used to bundle), made
# before the real one is hidden too.
mkdir -p "$work/control"
control=$(ls "$SKYCMD_PREFIX"/lib*/libskycmd.so.* 2>/dev/null | sed -n 1p)
[ -n "$control" ] || { echo "no libskycmd.so in $SKYCMD_PREFIX for the control"; exit 1; }
cp -L "$control" "$work/control/" && control=$work/control/$(basename "$control")
: > "$work/empty"
cat > "$work/hidden.sh" <<'EOF'
set -eu
empty=$1 control=$2 jar=$3 app=$4; shift 4
if [ "${SKYCMD_HIDE:-1}" = 1 ]; then
mount --make-rprivate /
for f in "$@"; do mount --bind "$empty" "$f"; echo "   hidden: $f"; done
# Control: what the jar used to bundle (libskycmd.so) cannot find its dependencies here.
for f in "$@"; do [ ! -s "$f" ] || { echo "control failed: $f still has content"; exit 1; }; done
out=$(ldd "$control" 2>&1) && ! grep -q 'not found' <<< "$out" && { echo "control failed: $control still loads:"; echo "$out"; exit 1; }
grep -E 'cjson|utf8proc|not found' <<< "$out" | sed 's/^/   control (ldd of the old bundled libskycmd.so): /'
fi
out=$(java -cp "$app/target/skycmd-consumer-1.0.jar:$jar" example.Main \
    "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$SKYCMD_CONSUMER_DUMP")
echo "$out"
grep -qxF "streaming batch: 2 answered, failed [SKYCMD_E_JSON]" <<< "$out" ||
    { echo "the streaming batch did not give 2 answers and one SKYCMD_E_JSON"; exit 1; }
grep -qxF "built-in model s1-pico-flappy" <<< "$out" || { echo "the built-in model did not open"; exit 1; }
# The jar as the named module org.skycmd (Automatic-Module-Name) on the module path: the
# native library loads from the module too, with the same answers.
java --module-path "$jar" --add-modules org.skycmd -cp "$app/target/skycmd-consumer-1.0.jar" example.Main \
    "$SKYCMD_CONSUMER_MODEL" "$SKYCMD_CONSUMER_REQUEST" "$SKYCMD_CONSUMER_DUMP.module" >/dev/null
cmp "$SKYCMD_CONSUMER_DUMP" "$SKYCMD_CONSUMER_DUMP.module"
rm -f "$SKYCMD_CONSUMER_DUMP.module"
echo "   the same answers with the jar on the module path (module org.skycmd)"
EOF
# Model.openDefault: the prefix's built-in model, named as a jar's user names it.
export SKYCMD_DEFAULT_MODEL=$SKYCMD_PREFIX/share/skycmd/models/s1-pico-flappy.gguf
if [ "$(id -u)" -eq 0 ]; then ns=(unshare -m); else ns=(unshare -r -m); fi
if "${ns[@]}" --propagation private true 2>/dev/null; then
    "${ns[@]}" bash "$work/hidden.sh" "$work/empty" "$control" "$jar" "$app" "${hide[@]}"
else
    # Inside a chroot "/" is no mount point, so no private mount namespace can be made (and
    # a bind mount in a shared one would reach the host): step 3's NEEDED check (only the C
    # runtime) stands, and the example runs with the system libraries present.
    echo "   no private mount namespace here (unshare: $("${ns[@]}" --propagation private true 2>&1 | head -c 120)):"
    echo "   the NEEDED check of step 3 stands; the libraries are not hidden for this run"
    SKYCMD_HIDE=0 bash "$work/hidden.sh" "$work/empty" "$control" "$jar" "$app" "${hide[@]}"
fi
echo "   dump: $SKYCMD_CONSUMER_DUMP ($(wc -l < "$SKYCMD_CONSUMER_DUMP") lines)"
