// Test helpers for the vnfs command line: running it (and shell commands) to completion
// with stdout and stderr captured byte for byte, and building a sample tree.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace vnfs::test {

struct run_result {
  std::string out;  ///< stdout, exactly
  std::string err;  ///< stderr, exactly
  int code = -1;    ///< exit code (-1 if killed by a signal)
};

/// Runs `program args...` to its end (at most two minutes), stdin from /dev/null.
run_result run_program(const std::filesystem::path& program, const std::vector<std::string>& args);

/// Runs the vnfs built by this build.
run_result vnfs_cli(const std::vector<std::string>& args);

/// Runs `/bin/sh -c script`; fails the test unless it exits 0. Returns stdout.
std::string shell(const std::string& script);

/// Single-quotes a string for the shell.
std::string quoted(const std::string& s);

/// Makes, under `dir` (which must exist and be empty), a tree with: regular files of 0 bytes,
/// a few bytes and 3 MiB + 17 bytes; nested directories three deep; symlinks (relative,
/// absolute-looking, dangling); modes 0600, 0640, 0755, 0700, 0750 and 04755; a hidden file;
/// and set modification times (several in 2020, some within the last months) on files,
/// directories and symlinks.
void make_sample_tree(const std::filesystem::path& dir);

/// One line per object under `dir` (itself included), sorted: path, type, mode, size
/// (files only), mtime with nanoseconds (of symlinks too unless `symlink_times` is false),
/// symlink contents. Does not follow symlinks.
std::string tree_signature(const std::filesystem::path& dir, bool symlink_times = true);

}  // namespace vnfs::test
