// `mmirage query EXPR`: evaluate a JMESPath expression on JSON from stdin — the same engine as `inputs[*].key`,
// for checking keys against real rows. With --lines, each non-blank stdin line is one document.
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "cli/common.h"
#include "data/dataset.h"
#include "data/json.h"
#include "query/jmespath.h"

namespace mmirage::cli {

Runner RegisterQuery(CLI::App* app) {
  struct Opts {
    std::string expression;
    bool lines = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app->add_subcommand("query", "Evaluate a JMESPath expression on JSON read from stdin");
  cmd->add_option("expression", o->expression, "JMESPath expression")->required();
  cmd->add_flag("--lines", o->lines, "Read JSON Lines: one document per line, one result per line");
  return [o]() {
    auto expr = query::Expression::Compile(o->expression);
    if (!expr.ok()) {
      std::cerr << "error: " << o->expression << ": " << expr.status().message() << "\n";
      return kExitFailure;
    }
    auto eval = [&](const std::string& text, const std::string& where) {
      auto doc = ParseJson(text);
      if (!doc.ok()) {
        std::cerr << "error: " << where << ": " << doc.status().message() << "\n";
        return false;
      }
      auto r = expr->Evaluate(*doc);
      if (!r.ok()) {
        std::cerr << "error: " << where << ": " << r.status().message() << "\n";
        return false;
      }
      std::cout << ToJson(*r) << "\n";
      return true;
    };
    if (!o->lines) {
      std::string all((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
      return eval(all, "stdin") ? kExitOk : kExitFailure;
    }
    std::string line;
    int64_t n = 0;
    bool ok = true;
    while (std::getline(std::cin, line)) {
      ++n;
      if (IsBlankLine(line)) continue;
      ok = eval(line, "stdin:" + std::to_string(n)) && ok;
    }
    return ok ? kExitOk : kExitFailure;
  };
}

}  // namespace mmirage::cli
