// vnfs command line: option parsing of one command.
#include "arguments.hpp"

#include "diagnostics.hpp"

namespace vnfs::cli {

namespace {

/// The letter `name` ("--zstd") stands for in `long_options` ("zstd=Z,..."), or 0.
char long_letter(std::string_view name, std::string_view long_options) {
  std::size_t at = 0;
  while (at < long_options.size()) {
    std::size_t end = long_options.find(',', at);
    if (end == std::string_view::npos) end = long_options.size();
    std::string_view item = long_options.substr(at, end - at);
    if (item.size() >= 3 && item[item.size() - 2] == '=' && name.substr(2) == item.substr(0, item.size() - 2))
      return item.back();
    at = end + 1;
  }
  return 0;
}

}  // namespace

arguments parse_arguments(std::string_view command, const std::vector<std::string>& args, std::string_view allowed,
                          std::string_view long_options) {
  arguments a;
  bool options_done = false;
  for (const std::string& s : args) {
    if (options_done || s.size() < 2 || s[0] != '-') {
      a.operands.push_back(s);
      continue;
    }
    if (s == "--") {
      options_done = true;
      continue;
    }
    if (s == "--help") {
      a.help = true;
      return a;
    }
    if (s[1] == '-') {
      if (char c = long_letter(s, long_options)) {
        if (!a.has(c)) a.flags += c;
        continue;
      }
    }
    if (s[1] == '-') throw usage_error(std::string(command) + ": unrecognized option '" + s + "'");
    for (char c : s.substr(1)) {
      if (allowed.find(c) == std::string_view::npos)
        throw usage_error(std::string(command) + ": invalid option -- '" + std::string(1, c) + "'");
      if (!a.has(c)) a.flags += c;
    }
  }
  return a;
}

void require_operands(std::string_view command, const arguments& a, std::size_t min, std::size_t max) {
  if (a.operands.size() < min) {
    std::string what = a.operands.empty() ? "missing operand" : "missing operand after '" + a.operands.back() + "'";
    throw usage_error(std::string(command) + ": " + what);
  }
  if (a.operands.size() > max) throw usage_error(std::string(command) + ": extra operand '" + a.operands[max] + "'");
}

}  // namespace vnfs::cli
