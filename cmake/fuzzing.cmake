# ZEUS_BUILD_FUZZERS: instruments everything built from here on for libFuzzer
# under AddressSanitizer and UBSan (UBSan findings abort, so they fail the
# run). Needs clang; the fuzz targets live in tests/fuzz.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ZEUS_BUILD_FUZZERS needs clang (e.g. CXX=clang++-14); see scripts/fuzz.sh")
endif()
add_compile_options(-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
