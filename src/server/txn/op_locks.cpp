#include "server/txn/op_locks.hpp"

#include <sys/stat.h>

#include <type_traits>

#include "server/fs/directory.hpp"

namespace vnfs::server::txn {

namespace {

using nfs4::nfs_argop4;

void add(const fs::object& obj, lock_mode mode, std::vector<lock_request>& out) {
  std::error_code ec;
  const fs::inode_id id = obj.inode(ec);
  if (!ec) out.push_back({object_key{id.dev, id.ino}, mode});
}

void add_named(const fs::object& dir, std::string_view name, std::vector<lock_request>& out) {
  if (!dir || !dir.is_directory()) return;
  std::error_code ec;
  fs::object obj = fs::lookup(dir, name, ec);
  if (!ec) add(obj, lock_mode::exclusive, out);
}

/// An OPEN that truncates the file if it exists: UNCHECKED4 with a size among its attributes
/// (RFC 8881 §18.16.3; GUARDED4 and the exclusive modes leave an existing file as it is).
bool truncates(const nfs4::OPEN4args& a) {
  return a.openhow.opentype == nfs4::opentype4::OPEN4_CREATE && a.openhow.how.mode == nfs4::createmode4::UNCHECKED4 &&
         a.openhow.how.createattrs.attrmask.test(nfs4::FATTR4_SIZE);
}

}  // namespace

void op_locks(const nfs_argop4& op, const compound_context& ctx, named_objects names, std::vector<lock_request>& out) {
  const bool named = names == named_objects::all;
  const fs::object& cur = ctx.current.obj;
  const fs::object& saved = ctx.saved.obj;
  constexpr lock_mode S = lock_mode::shared, X = lock_mode::exclusive;
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, nfs4::GETATTR4args> || std::is_same_v<T, nfs4::ACCESS4args> ||
                      std::is_same_v<T, nfs4::VERIFY4args> || std::is_same_v<T, nfs4::NVERIFY4args> ||
                      std::is_same_v<T, nfs4::READ4args> || std::is_same_v<T, nfs4::READLINK4args> ||
                      std::is_same_v<T, nfs4::READDIR4args> || std::is_same_v<T, nfs4::LOOKUP4args> ||
                      std::is_same_v<T, nfs4::LOOKUPP4args> || std::is_same_v<T, nfs4::SECINFO4args> ||
                      std::is_same_v<T, nfs4::COMMIT4args>) {
          add(cur, S, out);
        } else if constexpr (std::is_same_v<T, nfs4::WRITE4args> || std::is_same_v<T, nfs4::SETATTR4args> ||
                             std::is_same_v<T, nfs4::CREATE4args>) {
          add(cur, X, out);
        } else if constexpr (std::is_same_v<T, nfs4::OPEN4args>) {
          if (a.claim.claim != nfs4::open_claim_type4::CLAIM_NULL) return;  // CLAIM_FH and reclaims: no change
          const bool create = a.openhow.opentype == nfs4::opentype4::OPEN4_CREATE;
          add(cur, create ? X : S, out);
          if (create && (named || (names == named_objects::truncated && truncates(a)))) add_named(cur, a.claim.file, out);
        } else if constexpr (std::is_same_v<T, nfs4::REMOVE4args>) {
          add(cur, X, out);
          if (named) add_named(cur, a.target, out);
        } else if constexpr (std::is_same_v<T, nfs4::RENAME4args>) {
          add(saved, X, out);
          add(cur, X, out);
          if (named) {
            add_named(saved, a.oldname, out);
            add_named(cur, a.newname, out);
          }
        } else if constexpr (std::is_same_v<T, nfs4::LINK4args>) {
          add(cur, X, out);
          add(saved, X, out);  // its link count
        } else if constexpr (std::is_same_v<T, nfs4::COPY4args>) {
          add(saved, S, out);
          add(cur, X, out);
        }
      },
      op);
}

bool changes_nothing(const nfs_argop4& op) {
  return std::visit(
      [](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        (void)a;
        return std::is_same_v<T, nfs4::PUTFH4args> || std::is_same_v<T, nfs4::PUTROOTFH4args> ||
               std::is_same_v<T, nfs4::PUTPUBFH4args> || std::is_same_v<T, nfs4::GETFH4args> ||
               std::is_same_v<T, nfs4::SAVEFH4args> || std::is_same_v<T, nfs4::RESTOREFH4args> ||
               std::is_same_v<T, nfs4::LOOKUP4args> || std::is_same_v<T, nfs4::LOOKUPP4args> ||
               std::is_same_v<T, nfs4::GETATTR4args> || std::is_same_v<T, nfs4::ACCESS4args> ||
               std::is_same_v<T, nfs4::VERIFY4args> || std::is_same_v<T, nfs4::NVERIFY4args> ||
               std::is_same_v<T, nfs4::READ4args> || std::is_same_v<T, nfs4::READLINK4args> ||
               std::is_same_v<T, nfs4::READDIR4args> || std::is_same_v<T, nfs4::SECINFO4args>;
      },
      op);
}

}  // namespace vnfs::server::txn
