#!/usr/bin/env bash
# build.sh - the Spark SQL function org.skycmd.spark.DecideUdf (bindings/java/spark) as a jar.
#   bindings/java/spark/build.sh SPARK_JARS BINDING OUT.jar [--bundle]
#     SPARK_JARS  the directory of Spark's jars ($SPARK_HOME/jars; with PySpark,
#                 site-packages/pyspark/jars): compiled against, never copied
#     BINDING     the Java binding: its jar (mvn package in bindings/java) or classes dir
#                 (bindings/java/target/classes, with the JNI library under native/)
#     OUT.jar     the function's classes; with --bundle the binding's classes too, so one
#                 jar on spark.jars is all a job needs
# Needs a JDK >= 17 (javac, jar). Spark itself is a compile-time dependency only: the
# cluster's Spark provides it.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
spark_jars=$1 binding=$2 out=$(realpath -m "$3") bundle=${4:-}
[ -d "$spark_jars" ] || { echo "build.sh: no directory $spark_jars" >&2; exit 2; }
[ -e "$binding" ] || { echo "build.sh: no Java binding at $binding (mvn -f bindings/java/pom.xml package)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac --release 17 -Xlint:all,-path -Werror -cp "$spark_jars/*:$binding" -d "$work/classes" \
  "$here"/src/main/java/org/skycmd/spark/*.java
if [ "$bundle" = --bundle ]; then
  if [ -d "$binding" ]; then cp -r "$binding"/. "$work/classes/"
  else (cd "$work/classes" && jar xf "$(realpath "$binding")" && rm -rf META-INF); fi
fi
mkdir -p "$(dirname "$out")"
jar cf "$out" -C "$work/classes" .
echo "build.sh: $out"
