// tests/txn: what a vnfsd export's state directory holds besides what it keeps for good.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "server/txn/journal.hpp"
#include "server/txn/journal_pool.hpp"

namespace vnfs::txn_test {

/// The names in `export_root`'s state directory that no finished transaction leaves there:
/// everything but the outcome log and the files of the journal slots, and the journal of a
/// slot's newest transaction if that neither committed nor ended, or, with `at_rest` (the
/// server stopped, or its recovery ran), if it committed with redo records and awaits its
/// checkpoint (while the server runs, for a few milliseconds after a commit; journal files of finished
/// transactions stay, to be written over by later ones; the older journal of a slot ended
/// before the newer began). Empty if there is no state directory.
inline std::vector<std::string> state_leftovers(const std::filesystem::path& export_root, bool at_rest = true) {
  namespace txn = vnfs::server::txn;
  std::vector<std::string> out;
  const auto state = export_root / ".vnfsd-txn";
  std::error_code ec;
  if (!std::filesystem::is_directory(state, ec)) return out;
  const int sfd = ::open(state.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sfd < 0) return {"(state directory unreadable)"};
  for (const auto& e : std::filesystem::directory_iterator(state)) {
    const std::string n = e.path().filename().string();
    if (n == "outcomes") continue;
    const auto slot_file = txn::journal_pool::parse(n);
    if (!slot_file) {
      out.push_back(n);
      continue;
    }
    if (slot_file->second == 2) continue;  // a data file
    const txn::journal_contents j = txn::read_journal(sfd, n, ec);
    const std::string other = txn::journal_pool::file_name(slot_file->first, 1 - slot_file->second);
    std::error_code other_ec;
    const txn::journal_contents o = txn::read_journal(sfd, other, other_ec);
    const bool newest = other_ec || j.gen > o.gen;
    if (ec || (newest && !j.records.empty() && !j.committed() && !j.ended())) out.push_back(n + " (unfinished)");
    else if (at_rest && newest && j.pending()) out.push_back(n + " (not checkpointed)");
  }
  ::close(sfd);
  return out;
}

}  // namespace vnfs::txn_test
