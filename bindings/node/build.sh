#!/usr/bin/env bash
# build.sh - generate the SWIG Node-API wrapper from ../swig/skycmd.i and compile the addon
# (build/Release/skycmd.node). Node-API version 8 only: one binary serves every Node >= 18
# without a rebuild per major. Needs `npm ci` (node-addon-api, node-api-headers), SWIG >= 4.2
# ($SWIG or swig on PATH) and libskycmd through pkg-config (PKG_CONFIG_PATH=<builddir>/pkgconfig
# for a build tree; its library directory becomes the addon's rpath).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
swig=${SWIG:-swig}
mkdir -p "$here/src" "$here/build/Release"
"$swig" -javascript -napi -I"$here/../../include" -o "$here/src/skycmd_wrap.cxx" "$here/../swig/skycmd.i"
libdir=$(pkg-config --libs-only-L skycmd | tr ' ' '\n' | sed -n 's/^-L//p' | head -n1)
rpath=()
[ -n "$libdir" ] && rpath=("-Wl,-rpath,$libdir")
${CXX:-g++} -shared -fPIC -O2 -std=c++17 -fvisibility=hidden -fno-strict-aliasing \
    -DNAPI_VERSION=8 \
    -I"$here/node_modules/node-addon-api" -I"$here/node_modules/node-api-headers/include" \
    $(pkg-config --cflags skycmd) "$here/src/skycmd_wrap.cxx" \
    -o "$here/build/Release/skycmd.node" $(pkg-config --libs skycmd) "${rpath[@]}"
