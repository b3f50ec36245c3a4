// vnfs — the command line of the vnfs SDK: ls, stat, cat, get, put, cp, mv, rm, mkdir, ln on
// nfs://, nfs+rdma://, file:// locations and local paths, built on the vectorized calls.
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "client_pool.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "output.hpp"

using namespace vnfs::cli;

namespace {

std::string overall_help() {
  std::string s =
      "Usage: vnfs [--stats] [--scalar] COMMAND [ARGS...]\n"
      "\n"
      "Works on files of NFSv4.1 servers and local files through the vnfs client's\n"
      "vectorized calls, which pack many file operations into few COMPOUNDs.\n"
      "\n"
      "Commands:\n";
  for (const auto& c : command_table()) {
    std::string head = "  " + std::string(c.name) + " " + c.synopsis;
    if (head.size() < 36) head.resize(36, ' ');
    else head += "\n" + std::string(36, ' ');
    s += head + c.summary + "\n";
  }
  s +=
      "\n"
      "A LOCATION is nfs://HOST[:PORT]/PATH (TCP; port 2049 by default),\n"
      "nfs+rdma://HOST[:PORT]/PATH (RPC-over-RDMA, where this build supports it),\n"
      "file:///PATH or a local PATH. All locations on one server share one connection, to\n"
      "the server's root; all local ones one file:/// client. Symlinks are never followed,\n"
      "except in the directories above a local PATH.\n"
      "\n"
      "Options (before COMMAND):\n"
      "  --stats    print, as the last line of standard output, one JSON object with the\n"
      "             counters of the clients used: {\"compounds\":N,\"ops\":N,\"bytes_out\":N,\n"
      "             \"bytes_in\":N,\"clients\":N,\"seconds\":S} (COMPOUNDs, operations in them,\n"
      "             bytes sent and received; wall-clock seconds of the command)\n"
      "  --scalar   run every item of a vectorized call as the scalar calls, one round trip\n"
      "             pattern per item (the baseline COMPOUND packing is measured against)\n"
      "  --help     print this help; 'vnfs COMMAND --help' describes COMMAND\n"
      "\n"
      "A progress bar is shown on standard error during copies and removals that take over\n"
      "half a second (VNFS_PROGRESS_DELAY_MS in the environment: milliseconds instead),\n"
      "only when standard error is a terminal.\n"
      "\n"
      "Exit status: 0 on success, 1 if an operation failed, 2 for a wrong command line.\n";
  return s;
}

int usage_failure(const std::string& message, const std::string& help_hint) {
  std::fprintf(stderr, "vnfs: %s\nTry '%s'.\n", message.c_str(), help_hint.c_str());
  return exit_usage;
}

void print_stats(const client_pool& pool, std::size_t clients, double seconds) {
  vnfs::client_stats s = pool.total();
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", seconds);
  std::string line = "{\"compounds\":" + std::to_string(s.compounds) + ",\"ops\":" + std::to_string(s.operations) +
      ",\"bytes_out\":" + std::to_string(s.bytes_sent) + ",\"bytes_in\":" + std::to_string(s.bytes_received) +
      ",\"clients\":" + std::to_string(clients) + ",\"seconds\":" + secs + "}\n";
  if (stdout_taken()) {
    std::fputs(line.c_str(), stderr);
    return;
  }
  if (!out_at_line_start()) out("\n");
  out(line);
}

}  // namespace

int main(int argc, char** argv) {
  auto start = std::chrono::steady_clock::now();
  bool stats = false;
  vnfs::client_options options;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    std::string opt = argv[i];
    if (opt == "--stats") stats = true;
    else if (opt == "--scalar") options.compound_vectors = false;
    else if (opt == "--help" || opt == "-h") {
      out(overall_help());
      return 0;
    } else return usage_failure("unknown option '" + opt + "'", "vnfs --help");
  }
  if (i == argc) return usage_failure("missing command", "vnfs --help");
  const command* cmd = find_command(argv[i]);
  if (!cmd) return usage_failure("unknown command '" + std::string(argv[i]) + "'", "vnfs --help");
  std::vector<std::string> args(argv + i + 1, argv + argc);
  std::string hint = "vnfs " + std::string(cmd->name) + " --help";

  client_pool pool(options);
  int status = 0;
  try {
    arguments a = parse_arguments(cmd->name, args, cmd->options, cmd->long_options);
    if (a.help) {
      out(command_help(*cmd));
      return 0;
    }
    require_operands(cmd->name, a, cmd->min_operands, cmd->max_operands);
    command_context ctx{pool};
    cmd->run(ctx, a);
  } catch (const usage_error& e) {
    return usage_failure(e.what(), hint);
  } catch (const command_error& e) {
    report(e.what());
  } catch (const std::exception& e) {
    report(std::string("unexpected error: ") + e.what());
  }
  if (failed()) status = exit_failure;
  if (stats) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_stats(pool, pool.size(), seconds);
  }
  if (std::fflush(stdout) != 0 && status == 0) {
    std::fprintf(stderr, "vnfs: write error: %s\n", std::strerror(errno));
    status = exit_failure;
  }
  return status;
}
