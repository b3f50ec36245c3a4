// vnfs command line: the commands — their table (name, synopsis, help, options, operands)
// and the functions that run them.
#pragma once

#include <cstddef>
#include <string>
#include <system_error>
#include <vector>

#include "arguments.hpp"
#include "client_pool.hpp"
#include "location.hpp"

namespace vnfs::cli {

struct command_context {
  client_pool& pool;
};

/// Runs a command whose arguments have been checked against its table entry. Failures that
/// end the command throw command_error; others are report()ed and the command goes on.
using command_fn = void (*)(command_context&, const arguments&);

struct command {
  const char* name;
  const char* synopsis;  ///< after "vnfs NAME "
  const char* summary;   ///< one line, for the overall help
  const char* help;      ///< the rest of NAME --help
  const char* options;   ///< the option letters accepted
  std::size_t min_operands, max_operands;
  command_fn run;
  const char* long_options = "";  ///< long options standing for letters (see parse_arguments)
};

/// Every command, in the order the overall help lists them.
const std::vector<command>& command_table();
/// The entry for `name`, or nullptr.
const command* find_command(const std::string& name);
/// NAME --help's text.
std::string command_help(const command& c);

/// The attributes `mask` of a location's object; on failure `ec` is set and the result
/// is meaningless.
file_stat stat_of(vnfs::client& c, const location& l, unsigned mask, std::error_code& ec);

/// Where a copy or move of `src` to `dst` lands: dst itself, or dst/NAME when dst is an
/// existing directory (NAME is src's last component). Throws command_error if dst cannot
/// be examined for another reason than not existing. `*missing` (if given) says whether the
/// place it returns did not exist when looked at (then the caller need not look again).
location landing(vnfs::client& dst_client, const location& src, const location& dst, bool* missing = nullptr);

void run_ls(command_context& ctx, const arguments& a);
void run_stat(command_context& ctx, const arguments& a);
void run_cat(command_context& ctx, const arguments& a);
void run_get(command_context& ctx, const arguments& a);
void run_put(command_context& ctx, const arguments& a);
void run_cp(command_context& ctx, const arguments& a);
void run_mv(command_context& ctx, const arguments& a);
void run_rm(command_context& ctx, const arguments& a);
void run_mkdir(command_context& ctx, const arguments& a);
void run_ln(command_context& ctx, const arguments& a);
void run_tar(command_context& ctx, const arguments& a);

}  // namespace vnfs::cli
