// vnfs command line: how failures are reported — messages on stderr that name the path and
// the reason, and the exit status they lead to.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace vnfs::cli {

/// Exit statuses: 0 success, 1 an operation failed, 2 the command line was wrong.
inline constexpr int exit_failure = 1;
inline constexpr int exit_usage = 2;

/// A command line that cannot be run (unknown command or option, missing operand, a
/// location that does not parse). The message has no "vnfs: " prefix.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An operation that failed and ends the command. The message has no "vnfs: " prefix and
/// already names the path and the reason ("cannot stat 'x': No such file or directory").
class command_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The reason part of a message: strerror's text when the error has a POSIX equivalent
/// (NFS4ERR_NOENT reads "No such file or directory", as for a local file), else the
/// category's own message (also for the library's own errors: "unsupported URL").
std::string reason(std::error_code ec);

/// "what 'path': reason", e.g. failure("cannot stat", "x", ec).
std::string failure(std::string_view what, std::string_view path, std::error_code ec);

/// Writes "vnfs: message" to stderr (erasing a progress bar first) and remembers that the
/// command failed (see failed()).
void report(std::string_view message);

/// Whether report() was called: the command ends with exit_failure.
bool failed();

}  // namespace vnfs::cli
