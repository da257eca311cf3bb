# embed.cmake - write a file's bytes as a C array (cmake -DIN=file -DOUT=file.c -DNAME=sym -P).
# GET /openapi.json serves docs/openapi.json this way: the committed document is the one
# the binary answers with, byte for byte.
file(READ "${IN}" _hex HEX)
string(LENGTH "${_hex}" _n)
math(EXPR _bytes "${_n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _arr "${_hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by src/serve/embed.cmake: do not edit */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {${_arr}0x00};\nconst size_t ${NAME}_len = ${_bytes};\n")
