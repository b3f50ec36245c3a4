// vnfs command line: a command's arguments — single-letter options (which may be grouped,
// "-lR"), "--help", "--" to end the options, then operands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vnfs::cli {

struct arguments {
  std::string flags;                  ///< the option letters given, each once
  std::vector<std::string> operands;  ///< in order
  bool help = false;                  ///< --help was given (the rest is not checked)

  bool has(char flag) const { return flags.find(flag) != std::string::npos; }
};

/// Parses `args` for `command`, which accepts the option letters in `allowed`. Throws
/// usage_error ("COMMAND: invalid option -- 'x'", "COMMAND: unrecognized option '--xyz'").
/// `long_options` names long options that stand for a letter: "zstd=Z,gzip=z" makes
/// "--zstd" set the flag Z (which need not be in `allowed`: then only the long form gives it).
arguments parse_arguments(std::string_view command, const std::vector<std::string>& args, std::string_view allowed,
                          std::string_view long_options = {});

/// Throws usage_error unless there are between `min` and `max` operands
/// ("COMMAND: missing operand", "COMMAND: extra operand 'x'").
void require_operands(std::string_view command, const arguments& a, std::size_t min, std::size_t max);

}  // namespace vnfs::cli
