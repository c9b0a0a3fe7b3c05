# libmtmd (llama.cpp's multimodal library: vision/audio projectors, tools/mtmd of the pinned source) built as our own
# small static target against whichever llama.cpp build cmake/llama.cmake chose. llama.cpp's prebuilt release has no
# libmtmd, and in the source mode this saves building llama.cpp's tools just for it. Same source, same headers, the
# same compile flags llama.cpp uses for it (-O3, C++17, no video: that needs llama.cpp's subprocess support).
# Adds `llama_mtmd` and `llama_cpp` = llama_mtmd + llama_cpp_core (in that order, for the static libraries).
set(_M "${MMIRAGE_LLAMA_SRC}/tools/mtmd")
if(NOT EXISTS "${_M}/mtmd.cpp")
  message(FATAL_ERROR "llama.cpp's tools/mtmd is not at ${_M}; run scripts/setup.sh")
endif()
file(GLOB _mtmd_models "${_M}/models/*.cpp")
add_library(llama_mtmd STATIC
  "${_M}/mtmd.cpp" "${_M}/mtmd-audio.cpp" "${_M}/mtmd-image.cpp" "${_M}/mtmd-helper.cpp" "${_M}/mtmd-helper-gen.cpp"
  "${_M}/clip.cpp" ${_mtmd_models}
  "${MMIRAGE_LLAMA_SRC}/vendor/hash/hash.cpp" "${MMIRAGE_LLAMA_SRC}/vendor/hash/xxhash/xxhash.c"
  "${MMIRAGE_LLAMA_SRC}/vendor/hash/sha1/sha1.c" "${MMIRAGE_LLAMA_SRC}/vendor/hash/sha256/sha256.c")
# sha1.c lives in a C++ namespace (llama.cpp compiles it as C++ too).
set_source_files_properties("${MMIRAGE_LLAMA_SRC}/vendor/hash/sha1/sha1.c" PROPERTIES LANGUAGE CXX)
set_target_properties(llama_mtmd PROPERTIES CXX_STANDARD 17 POSITION_INDEPENDENT_CODE ON)
target_include_directories(llama_mtmd SYSTEM PRIVATE "${MMIRAGE_LLAMA_SRC}/vendor/hash")
target_include_directories(llama_mtmd SYSTEM PUBLIC "${_M}")
target_compile_options(llama_mtmd PRIVATE -w)  # third-party code
target_link_libraries(llama_mtmd PUBLIC llama_cpp_core PRIVATE Threads::Threads)
add_library(llama_cpp INTERFACE)
target_link_libraries(llama_cpp INTERFACE llama_mtmd)
