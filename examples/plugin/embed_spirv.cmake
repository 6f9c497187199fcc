# Writes a SPIR-V file as a C array: cmake -DSPV=in.spv -DOUT=out.h -P embed_spirv.cmake
file(READ ${SPV} _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
file(WRITE ${OUT} "/* generated from ${SPV} */\nstatic const unsigned char swish_spv[] = {${_bytes}};\n")
