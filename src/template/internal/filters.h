// Internal: the built-in filter and test tables. Filters and tests are resolved by name at parse time
// (an unknown name is a parse error, as in Jinja2) and called with already-evaluated arguments.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "template/internal/runtime.h"

namespace mmirage::tmpl::internal {

struct CallArgs {
  std::vector<Val> pos;
  std::vector<std::pair<std::string, Val>> kw;
};

using FilterFn = Result<Val> (*)(Val subject, CallArgs& args);
using TestFn = Result<bool> (*)(const Val& subject, CallArgs& args);

struct FilterDef {
  const char* name;
  FilterFn fn;
};
struct TestDef {
  const char* name;
  TestFn fn;
};

// nullptr when there is no such filter / test.
const FilterDef* FindFilter(std::string_view name);
const TestDef* FindTest(std::string_view name);

// Binds Python-style parameters: the argument at `index` or keyword `name`; nullptr when absent.
const Val* Arg(const CallArgs& args, size_t index, std::string_view name);
// Errors when more positional arguments than `max_pos` are given or an unknown keyword is used.
Status CheckArgs(const CallArgs& args, std::string_view fn, size_t max_pos,
                 std::initializer_list<std::string_view> keywords);

// Filter tables live in two files; each exposes its part.
const std::vector<FilterDef>& StringFilters();
const std::vector<FilterDef>& SequenceFilters();

}  // namespace mmirage::tmpl::internal
