// vnfs command line: standard output.
#include "output.hpp"

#include <cstdio>

namespace vnfs::cli {

namespace {
bool line_start = true;
bool taken = false;
}  // namespace

void take_stdout() { taken = true; }
bool stdout_taken() { return taken; }

void out(std::string_view text) {
  if (text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  line_start = text.back() == '\n';
}

bool out_at_line_start() { return line_start; }

}  // namespace vnfs::cli
