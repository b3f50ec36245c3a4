// vnfs archive adapter: the one exception its calls throw.
#pragma once

#include <stdexcept>
#include <string>

namespace vnfs::archive {

/// A failure that ended an archive or an extraction. what() names the entry (its path in
/// the archive) and the reason: "a/b.txt: cannot write: Permission denied", "archive
/// damaged after 'a/b.txt': Truncated tar archive"; a failure of the tree's root itself
/// names no entry ("cannot stat: No such file or directory", "not a directory").
class archive_error : public std::runtime_error {
 public:
  archive_error(std::string entry, const std::string& message);
  /// The entry concerned ("" when none is).
  const std::string& entry() const { return entry_; }

 private:
  std::string entry_;
};

}  // namespace vnfs::archive
