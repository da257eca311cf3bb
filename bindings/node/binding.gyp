# binding.gyp - the Node-API addon of libskycmd, built on `npm install` (install.js runs
# node-gyp) from the committed SWIG wrapper src/skycmd_wrap.cxx (bindings/generate.sh makes
# it; SWIG is not needed here), against the libskycmd that `pkg-config skycmd` finds.
# Linux: no rpath is added: the addon finds libskycmd.so.1 through the normal loader path
# (the system library directory, or LD_LIBRARY_PATH for a prefix install).
# macOS: node-gyp ignores cflags/cflags_cc there and takes the compiler and linker flags
# from xcode_settings (its default is -fno-exceptions, GCC_ENABLE_CPP_EXCEPTIONS=NO).
# libskycmd.1.dylib's install name is @rpath/libskycmd.1.dylib, so the addon carries an
# rpath to the directories pkg-config names (-L); the addon's own exports are node-gyp's
# business (hidden visibility, -undefined dynamic_lookup for Node's symbols) and libskycmd
# is linked as the shared library, so nothing of it is duplicated inside.
{
  "targets": [
    {
      "target_name": "skycmd",
      "sources": ["src/skycmd_wrap.cxx"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8"],
      # The wrapper and its async workers use C++ exceptions (node-addon-api's
      # NAPI_CPP_EXCEPTIONS mode); node-gyp turns them off by default.
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fno-strict-aliasing", "-Wno-unused-parameter",
                    "<!@(pkg-config --cflags skycmd)"],
      "libraries": ["<!@(pkg-config --libs skycmd)"],
      "conditions": [
        ["OS=='mac'", {
          "xcode_settings": {
            "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
            "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
            "CLANG_CXX_LIBRARY": "libc++",
            "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
            "OTHER_CPLUSPLUSFLAGS": ["-fno-strict-aliasing", "-Wno-unused-parameter",
                                     "<!@(pkg-config --cflags skycmd)"],
            "LD_RUNPATH_SEARCH_PATHS": ["<!@(pkg-config --libs-only-L skycmd | sed 's/-L//g')"]
          }
        }]
      ]
    }
  ]
}
