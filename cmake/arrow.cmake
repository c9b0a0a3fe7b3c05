# Apache Arrow + Parquet C++ 26.0.1, unpacked by scripts/setup.sh from the pinned pyarrow wheel into the cache
# (MMIRAGE_ARROW_DIR = <cache>/arrow/<version> with include/ and lib/). The wheel has no CMake or pkg-config files,
# so the shared libraries are linked by full path (RPATH points at the cache). Provides the INTERFACE target
# `arrow_cpp`; only mmirage_data links it (privately: no other module sees Arrow headers).
set(MMIRAGE_ARROW_DEFAULT_DIR "$ENV{HOME}/.cache/mmirage/arrow/26.0.1")
if(NOT MMIRAGE_ARROW_DIR)
  set(MMIRAGE_ARROW_DIR "${MMIRAGE_ARROW_DEFAULT_DIR}" CACHE PATH "" FORCE)
endif()
set(_A "${MMIRAGE_ARROW_DIR}")
foreach(f "${_A}/lib/libarrow.so.2600" "${_A}/lib/libparquet.so.2600" "${_A}/lib/libarrow_s3.so.2600"
          "${_A}/include/arrow/api.h")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "Arrow C++ is not unpacked at ${_A} (missing ${f}); run scripts/setup.sh")
  endif()
endforeach()
add_library(arrow_cpp INTERFACE)
target_include_directories(arrow_cpp SYSTEM INTERFACE "${_A}/include")
# The wheel's libraries are built with the new libstdc++ ABI; our code must match.
target_compile_definitions(arrow_cpp INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
# libarrow_s3: Arrow's S3 file system (s3:// paths, data/arrow/s3_env.cc), the AWS SDK linked into it.
target_link_libraries(arrow_cpp INTERFACE "${_A}/lib/libparquet.so.2600" "${_A}/lib/libarrow_s3.so.2600"
  "${_A}/lib/libarrow.so.2600"
  "-Wl,-rpath,${_A}/lib")
