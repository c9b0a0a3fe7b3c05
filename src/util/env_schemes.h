// Paths with a URL scheme ("s3://bucket/key") are served by an Env registered for that scheme: Env::Default()
// sends every operation on such a path to it and every other path to the POSIX Env. The scheme's Env is created on
// the first operation on one of its paths, so a run that never names one never loads what it needs (the S3 Env
// lives in the Arrow module).
//
// Thread-safety: RegisterSchemeEnv before any other thread uses Env::Default() (main() does it); SchemeEnv and
// Env::Default() are thread-safe. Errors: an operation on a path whose scheme has no Env, or whose Env cannot be
// created, fails with that Env's error naming the path.
#pragma once

#include <string>
#include <string_view>

#include "util/env.h"
#include "util/status.h"

namespace mmirage {

// Creates the Env of one scheme (called once, on first use; the Env lives until process exit).
using SchemeEnvFactory = Result<Env*> (*)();

// `scheme` without "://", e.g. "s3". Registering a scheme again replaces its factory.
void RegisterSchemeEnv(const std::string& scheme, SchemeEnvFactory factory);

// "s3" for "s3://b/k"; empty for a local path (no "<letters>://" prefix).
std::string PathScheme(std::string_view path);

// The Env for `path`: nullptr for a local path, else the scheme's Env (created now if need be) or its error.
Result<Env*> SchemeEnv(std::string_view path);

// Env::Default(): routes by scheme as described above; `local` serves paths without a scheme. Never destroyed.
Env* NewRoutingEnv(Env* local);

}  // namespace mmirage
