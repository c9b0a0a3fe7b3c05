# llama.cpp, provided by scripts/setup.sh in a cache outside the repo: MMIRAGE_LLAMA_DIR = <cache>/<version>-<commit>
# with src/ (the pinned source: headers, and the vocab/templates the tools read) and one of two builds:
#   MMIRAGE_LLAMA_MODE=prebuilt  llama.cpp's released shared libraries for this release (npm
#                                @node-llama-cpp/linux-x64) in MMIRAGE_LLAMA_LIB_DIR: libllama, libllama-common,
#                                libggml(-base) and one libggml-cpu-<family>.so per CPU family, loaded at run time
#                                (MMIRAGE_LLAMA_DYNAMIC_BACKENDS). Linux x86-64, CPU only.
#   MMIRAGE_LLAMA_MODE=source    static libraries built from src/ in MMIRAGE_LLAMA_BUILD_DIR (any system, CUDA).
# Provides `llama_cpp_core` (libllama, ggml, common); cmake/mtmd.cmake adds libmtmd and `llama_cpp`; only mmirage_engine and tools link it. MMIRAGE_LLAMA_RUNTIME_LIBS lists
# the shared libraries a relocatable install must carry (empty for a static build).
set(MMIRAGE_LLAMA_DEFAULT_DIR "$ENV{HOME}/.cache/mmirage/llama.cpp/3.21.1-80fb11a")
if(NOT MMIRAGE_LLAMA_DIR)
  set(MMIRAGE_LLAMA_DIR "${MMIRAGE_LLAMA_DEFAULT_DIR}" CACHE PATH "" FORCE)
endif()
set(MMIRAGE_LLAMA_MODE "source" CACHE STRING "prebuilt (llama.cpp's released shared libraries) or source")
set_property(CACHE MMIRAGE_LLAMA_MODE PROPERTY STRINGS prebuilt source)
set(MMIRAGE_LLAMA_BUILD_DIR "${MMIRAGE_LLAMA_DIR}/build" CACHE PATH "source mode: the llama.cpp build tree")
set(MMIRAGE_LLAMA_LIB_DIR "${MMIRAGE_LLAMA_DIR}/prebuilt-linux-x64" CACHE PATH "prebuilt mode: the shared libraries")
set(_L "${MMIRAGE_LLAMA_DIR}")
if(NOT EXISTS "${_L}/src/include/llama.h")
  message(FATAL_ERROR "llama.cpp source is not at ${_L}/src; run scripts/setup.sh")
endif()

add_library(llama_cpp_core INTERFACE)
target_include_directories(llama_cpp_core SYSTEM INTERFACE
  "${_L}/src/include" "${_L}/src/ggml/include" "${_L}/src/common" "${_L}/src/vendor")
set(MMIRAGE_LLAMA_RUNTIME_LIBS "")

if(MMIRAGE_LLAMA_MODE STREQUAL "prebuilt")
  set(_P "${MMIRAGE_LLAMA_LIB_DIR}")
  set(_shared libllama-common.so libllama.v0.4.0.so libggml.v0.4.0.so libggml-base.so)
  foreach(lib ${_shared})
    if(NOT EXISTS "${_P}/${lib}")
      message(FATAL_ERROR "llama.cpp's prebuilt libraries are not at ${_P} (missing ${lib}); run scripts/setup.sh")
    endif()
    target_link_libraries(llama_cpp_core INTERFACE "${_P}/${lib}")
  endforeach()
  file(GLOB _cpu_variants "${_P}/libggml-cpu-*.so")
  if(NOT _cpu_variants)
    message(FATAL_ERROR "no libggml-cpu-*.so in ${_P}; run scripts/setup.sh")
  endif()
  target_compile_definitions(llama_cpp_core INTERFACE MMIRAGE_LLAMA_DYNAMIC_BACKENDS=1)
  # The CPU backend built for this machine by scripts/setup.sh (libggml-cpu.so + cpu-flags), preferred at run time
  # over the prebuilt variants when this CPU has every flag of the build machine's (src/engine/llama_backends.h).
  set(MMIRAGE_LLAMA_NATIVE_CPU_DIR "" CACHE PATH "prebuilt mode: llama.cpp's CPU backend built for this CPU (optional)")
  if(MMIRAGE_LLAMA_NATIVE_CPU_DIR)
    if(NOT EXISTS "${MMIRAGE_LLAMA_NATIVE_CPU_DIR}/libggml-cpu.so" OR NOT EXISTS "${MMIRAGE_LLAMA_NATIVE_CPU_DIR}/cpu-flags")
      message(FATAL_ERROR "MMIRAGE_LLAMA_NATIVE_CPU_DIR=${MMIRAGE_LLAMA_NATIVE_CPU_DIR} lacks libggml-cpu.so or cpu-flags; run scripts/setup.sh")
    endif()
    target_compile_definitions(llama_cpp_core INTERFACE "MMIRAGE_LLAMA_NATIVE_CPU_DIR=\"${MMIRAGE_LLAMA_NATIVE_CPU_DIR}\"")
  endif()
  target_link_libraries(llama_cpp_core INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)
  foreach(lib ${_shared})
    list(APPEND MMIRAGE_LLAMA_RUNTIME_LIBS "${_P}/${lib}")
  endforeach()
  list(APPEND MMIRAGE_LLAMA_RUNTIME_LIBS ${_cpu_variants})
elseif(MMIRAGE_LLAMA_MODE STREQUAL "source")
  set(_B "${MMIRAGE_LLAMA_BUILD_DIR}")
  set(_libs
    "${_B}/common/libllama-common.a"
    "${_B}/common/libllama-common-base.a"
    "${_B}/src/libllama.a"
    "${_B}/ggml/src/libggml.a"
    "${_B}/ggml/src/libggml-cpu.a"
    "${_B}/ggml/src/libggml-base.a")
  foreach(lib ${_libs})
    if(NOT EXISTS "${lib}")
      message(FATAL_ERROR "llama.cpp is not built at ${_B} (missing ${lib}); run scripts/setup.sh")
    endif()
  endforeach()
  # Optional pieces of a build: CUDA backend and the HTTP vendor library that common may reference.
  file(GLOB _extra "${_B}/ggml/src/ggml-cuda/libggml-cuda.a" "${_B}/vendor/cpp-httplib/libcpp-httplib.a")
  find_package(OpenMP REQUIRED)
  target_link_libraries(llama_cpp_core INTERFACE
    -Wl,--start-group ${_libs} ${_extra} -Wl,--end-group
    OpenMP::OpenMP_CXX Threads::Threads ${CMAKE_DL_LIBS} m)
  if(EXISTS "${_B}/ggml/src/ggml-cuda/libggml-cuda.a")
    find_package(CUDAToolkit REQUIRED)
    target_link_libraries(llama_cpp_core INTERFACE CUDA::cudart CUDA::cublas CUDA::cuda_driver)
  endif()
else()
  message(FATAL_ERROR "MMIRAGE_LLAMA_MODE must be prebuilt or source, got '${MMIRAGE_LLAMA_MODE}'")
endif()
set(MMIRAGE_LLAMA_SRC "${_L}/src")
include(${CMAKE_CURRENT_LIST_DIR}/mtmd.cmake)
