// vnfs command line: failure messages and the exit status they imply.
#include "diagnostics.hpp"

#include <cstdio>

#include "progress.hpp"
#include "vnfs/error.hpp"

namespace vnfs::cli {

namespace {
bool any_failure = false;
}

std::string reason(std::error_code ec) {
  if (ec.category() == vnfs::category()) return ec.message();  // the library's own conditions
  std::error_condition c = ec.default_error_condition();
  if (c.category() == std::generic_category()) return std::generic_category().message(c.value());
  return ec.message();
}

std::string failure(std::string_view what, std::string_view path, std::error_code ec) {
  return std::string(what) + " '" + std::string(path) + "': " + reason(ec);
}

void report(std::string_view message) {
  progress::erase_active();
  std::fprintf(stderr, "vnfs: %.*s\n", static_cast<int>(message.size()), message.data());
  any_failure = true;
}

bool failed() { return any_failure; }

}  // namespace vnfs::cli
