// vnfs command line: standard output, with a note of whether it ends a line (so --stats
// can start its JSON line on a line of its own).
#pragma once

#include <string_view>

namespace vnfs::cli {

/// Writes to stdout (buffered).
void out(std::string_view text);
/// Whether nothing, or a complete last line, has been written so far.
bool out_at_line_start();
/// Standard output carries a command's data (tar -c -f -): --stats goes to stderr instead.
void take_stdout();
bool stdout_taken();

}  // namespace vnfs::cli
