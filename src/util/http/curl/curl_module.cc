// The shared module libmmirage_curl.so: libcurl, loaded on first use by util/http/curl_shim.cc (util/module.h).
// The module has no code of its own: it links libcurl, so loading it loads libcurl and what libcurl needs, found
// through the module's RUNPATH (beside it in an install bundle), and the shim finds the curl_* functions through
// the module's handle. This symbol names the module's version.
extern "C" __attribute__((visibility("default"))) const char mmirage_curl_module_v1[] = "libcurl";
