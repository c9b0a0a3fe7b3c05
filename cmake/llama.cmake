# llama.cpp, built by scripts/setup.sh into a cache outside the repo (MMIRAGE_LLAMA_DIR = <cache>/<version>-<commit>
# with src/ and build/). Provides the INTERFACE target `llama_cpp`; only mmirage_engine and tools link it.
set(MMIRAGE_LLAMA_DEFAULT_DIR "$ENV{HOME}/.cache/mmirage/llama.cpp/3.21.1-80fb11a")
if(NOT MMIRAGE_LLAMA_DIR)
  set(MMIRAGE_LLAMA_DIR "${MMIRAGE_LLAMA_DEFAULT_DIR}" CACHE PATH "" FORCE)
endif()
set(_L "${MMIRAGE_LLAMA_DIR}")
set(_libs
  "${_L}/build/common/libllama-common.a"
  "${_L}/build/common/libllama-common-base.a"
  "${_L}/build/src/libllama.a"
  "${_L}/build/ggml/src/libggml.a"
  "${_L}/build/ggml/src/libggml-cpu.a"
  "${_L}/build/ggml/src/libggml-base.a")
foreach(lib ${_libs})
  if(NOT EXISTS "${lib}")
    message(FATAL_ERROR "llama.cpp is not built at ${_L} (missing ${lib}); run scripts/setup.sh")
  endif()
endforeach()
# Optional pieces of a build: CUDA backend and the HTTP vendor library that common may reference.
file(GLOB _extra "${_L}/build/ggml/src/ggml-cuda/libggml-cuda.a" "${_L}/build/vendor/cpp-httplib/libcpp-httplib.a")
# libmtmd (vision/audio projectors) and the hash vendor library it uses: built by the llama-server build (or any
# build dir of the same tree that has them); the first match of each is used.
file(GLOB _mtmd "${_L}/build*/tools/mtmd/libmtmd.a")
file(GLOB _vhash "${_L}/build*/vendor/hash/libvendor-hash.a")
if(NOT _mtmd OR NOT _vhash)
  message(FATAL_ERROR "libmtmd is not built under ${_L}/build*/ (run scripts/setup.sh)")
endif()
list(GET _mtmd 0 _mtmd)
list(GET _vhash 0 _vhash)
list(APPEND _extra "${_mtmd}" "${_vhash}")
find_package(OpenMP REQUIRED)
add_library(llama_cpp INTERFACE)
target_include_directories(llama_cpp SYSTEM INTERFACE
  "${_L}/src/include" "${_L}/src/ggml/include" "${_L}/src/common" "${_L}/src/vendor"
  "${_L}/src/tools/mtmd")
target_link_libraries(llama_cpp INTERFACE
  -Wl,--start-group ${_libs} ${_extra} -Wl,--end-group
  OpenMP::OpenMP_CXX Threads::Threads ${CMAKE_DL_LIBS} m)
if(EXISTS "${_L}/build/ggml/src/ggml-cuda/libggml-cuda.a")
  find_package(CUDAToolkit REQUIRED)
  target_link_libraries(llama_cpp INTERFACE CUDA::cudart CUDA::cublas CUDA::cuda_driver)
endif()
set(MMIRAGE_LLAMA_SRC "${_L}/src")
