#include "server/txn/planner.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "server/fs/directory.hpp"
#include "server/ops/attribute_codec.hpp"
#include "server/txn/manager.hpp"
#include "server/txn/op_locks.hpp"
#include "server/txn/transaction.hpp"

namespace vnfs::server::txn {

namespace {

using nfs4::nfs_argop4;

/// Writes ending past this are not deferred (redo) but run before the commit (undo), where
/// failing is an ordinary error. A deferred write must not fail when applied after the
/// commit point; transaction::defer_write refuses what ends past the largest file the file
/// system allows, but one file can allow less (on ext4, a file mapped by indirect blocks,
/// as ext3 made them: about 4 TiB against 16).
constexpr std::uint64_t max_deferred_end = std::uint64_t(1) << 40;

/// What a filehandle of the simulated COMPOUND refers to: an existing object, or one made
/// by this transaction (possibly by an operation of this COMPOUND that has not run: then
/// `obj` is empty). Everything inside a directory the transaction made is its own too.
struct sim_fh {
  fs::object obj;
  bool made = false;
  bool set = false;
};

/// A component the operation will accept (check_component's rules, without the hidden
/// names, which plan() checks with the manager).
bool plain_name(const std::string& n) {
  return !n.empty() && n.size() <= 255 && n != "." && n != ".." && n.find('/') == std::string::npos &&
         n.find('\0') == std::string::npos;
}

class planner {
 public:
  planner(transaction& t, const compound_context& ctx) : t_(t), sim_(ctx.server, ctx.who), m_(ctx.server.txns) {
    sim_.clientid = ctx.clientid;
  }

  /// Plans operation `index` of the span; false: stop here.
  bool step(const nfs_argop4& op, std::size_t index) {
    op_ = index;
    return std::visit([&](const auto& a) { return on(a); }, op);
  }

  /// After the last step, `planned` operations of `total` planned: decides which files use
  /// redo (transaction.hpp) and makes the backups of the others. Returns how many
  /// operations stay planned (fewer if a backup failed: the operation that needs it makes
  /// it again when it runs, and fails).
  std::size_t finish(std::size_t planned, std::size_t total) {
    const bool redo = planned == total && t_.single_compound() && redo_allowed_;
    for (deferred_backup& d : deferred_) {
      if (redo && !no_redo_.contains(key(d.file)) && !t_.use_redo(d.file)) continue;  // deferred: no backup
      if (t_.protect_data(d.file, d.offset, d.length)) return d.op;
    }
    return planned;
  }

 private:
  template <class T>
  bool on(const T&) {
    // These read the current object's data or attributes: its changes cannot be deferred.
    using nfs4::GETATTR4args, nfs4::VERIFY4args, nfs4::NVERIFY4args, nfs4::READ4args, nfs4::COMMIT4args;
    if constexpr (std::is_same_v<T, GETATTR4args> || std::is_same_v<T, VERIFY4args> ||
                  std::is_same_v<T, NVERIFY4args> || std::is_same_v<T, READ4args> || std::is_same_v<T, COMMIT4args>)
      if (cur_.set && cur_.obj) no_redo_.insert(key(cur_.obj));
    // A listing shows the sizes and times of the files in it, whichever they are.
    if constexpr (std::is_same_v<T, nfs4::READDIR4args>) redo_allowed_ = false;
    return keeps_current<T>();
  }
  template <class T>
  static constexpr bool keeps_current() {
    using nfs4::GETATTR4args, nfs4::GETFH4args, nfs4::ACCESS4args, nfs4::VERIFY4args, nfs4::NVERIFY4args,
        nfs4::READ4args, nfs4::READLINK4args, nfs4::READDIR4args, nfs4::CLOSE4args, nfs4::COMMIT4args;
    // Operations that change nothing in the export and keep the current filehandle.
    return std::is_same_v<T, GETATTR4args> || std::is_same_v<T, GETFH4args> || std::is_same_v<T, ACCESS4args> ||
           std::is_same_v<T, VERIFY4args> || std::is_same_v<T, NVERIFY4args> || std::is_same_v<T, READ4args> ||
           std::is_same_v<T, READLINK4args> || std::is_same_v<T, READDIR4args> || std::is_same_v<T, CLOSE4args> ||
           std::is_same_v<T, COMMIT4args>;
  }
  bool on(const nfs4::PUTFH4args& a) {
    std::error_code ec;
    fs::object obj = sim_.server.exp.resolve(a.object, ec);
    if (ec) return false;
    return set_current(std::move(obj));
  }
  bool on(const nfs4::PUTROOTFH4args&) { return put_root(); }
  bool on(const nfs4::PUTPUBFH4args&) { return put_root(); }
  bool on(const nfs4::SAVEFH4args&) {
    if (!cur_.set) return false;
    return copy(cur_, saved_);
  }
  bool on(const nfs4::RESTOREFH4args&) {
    if (!saved_.set) return false;
    return copy(saved_, cur_);
  }
  bool on(const nfs4::LOOKUP4args& a) {
    if (!cur_.set || !plain_name(a.objname)) return false;
    if (cur_.made) return made_object();
    if (!cur_.obj.is_directory() || touched(cur_.obj, a.objname) || m_.hidden(cur_.obj, a.objname)) return false;
    std::error_code ec;
    fs::object obj = fs::lookup(cur_.obj, a.objname, ec);
    if (ec) return false;
    return set_current(std::move(obj));
  }
  bool on(const nfs4::WRITE4args& a) {
    if (!cur_.set) return false;
    if (cur_.made) return true;
    if (cur_.obj.type() != fs::file_type::regular || !lock(a)) return false;
    if (a.offset == nfs4::NFS4_UINT64_MAX) no_redo_.insert(key(cur_.obj));  // an append reads the size
    if (a.offset > max_deferred_end || a.data.size() > max_deferred_end - a.offset) no_redo_.insert(key(cur_.obj));
    return defer_backup(cur_.obj, a.offset, a.data.size());
  }
  bool on(const nfs4::SETATTR4args& a) {
    if (!cur_.set) return false;
    if (cur_.made) return true;
    fs::setattr_args sa;
    nfs4::bitmap4 bits;
    if (to_setattr_args(a.obj_attributes, sa, bits) != nfs4::nfsstat4::NFS4_OK) return false;
    if (!lock(a)) return false;
    attrs_set_ = true;
    no_redo_.insert(key(cur_.obj));
    return sa.size ? !t_.protect_data(cur_.obj, *sa.size, UINT64_MAX) : !t_.protect_attrs(cur_.obj);
  }
  bool on(const nfs4::OPEN4args& a) {
    if (!cur_.set || a.claim.claim != nfs4::open_claim_type4::CLAIM_NULL || !plain_name(a.claim.file)) return false;
    const bool create = a.openhow.opentype == nfs4::opentype4::OPEN4_CREATE;
    if (cur_.made) return made_object();
    // The directory's lock first, then the name's lookup, which it keeps from changing, and
    // the lock of what it finds (op_locks' named lock, without a second lookup).
    if (!named_change_ok(cur_.obj, a.claim.file) || !lock(a, named_objects::none)) return false;
    std::error_code ec;
    fs::object file = fs::lookup(cur_.obj, a.claim.file, ec);
    if (!ec && create && !lock_found(file)) return false;
    if (ec) {
      if (!create || ec != std::error_code(ENOENT, std::system_category())) return false;
      if (t_.protect_create_free(cur_.obj, a.claim.file)) return false;
      touch(cur_.obj, a.claim.file);
      return made_object();
    }
    if (file.type() != fs::file_type::regular) return false;
    if (create) {
      // An existing file: UNCHECKED4 with a size of 0 truncates it; other modes fail or
      // replay an exclusive create, which the operation sorts out itself.
      if (a.openhow.how.mode != nfs4::createmode4::UNCHECKED4) return false;
      fs::setattr_args sa;
      nfs4::bitmap4 bits;
      if (to_setattr_args(a.openhow.how.createattrs, sa, bits) != nfs4::nfsstat4::NFS4_OK) return false;
      if (sa.size && *sa.size == 0 && !defer_backup(file, 0, UINT64_MAX)) return false;
    }
    // After a SETATTR (a directory's mode or owner may have changed) the operation looks
    // again, with the permissions it then has.
    if (!attrs_set_) t_.note_found(cur_.obj, a.claim.file, file);
    // The name still finds this file afterwards: a later operation on it is planned too (a
    // vwrite sends a large file as several OPEN ... CLOSE groups in one COMPOUND).
    return set_current(std::move(file));
  }
  bool on(const nfs4::CREATE4args& a) {
    if (!cur_.set || !plain_name(a.objname)) return false;
    if (cur_.made) return made_object();
    if (!named_change_ok(cur_.obj, a.objname) || !lock(a)) return false;
    struct ::stat st {};
    if (::fstatat(cur_.obj.fd(), a.objname.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return false;  // it fails
    if (errno != ENOENT || t_.protect_create_free(cur_.obj, a.objname)) return false;
    touch(cur_.obj, a.objname);
    return made_object();
  }
  bool on(const nfs4::REMOVE4args& a) {
    if (!cur_.set || !plain_name(a.target)) return false;
    if (cur_.made) return true;
    if (!named_change_ok(cur_.obj, a.target) || !lock(a) || t_.protect_remove(cur_.obj, a.target)) return false;
    touch(cur_.obj, a.target);
    redo_allowed_ = false;  // it might remove a file whose changes would be deferred
    return true;
  }
  bool on(const nfs4::RENAME4args& a) {
    if (!cur_.set || !saved_.set || cur_.made || saved_.made || !plain_name(a.oldname) || !plain_name(a.newname))
      return false;
    if (!named_change_ok(saved_.obj, a.oldname) || !named_change_ok(cur_.obj, a.newname)) return false;
    if (!lock(a)) return false;
    // Only a rename that will find its source: the undo of a rename record moves the
    // target back to the source's name when that is free, which is right only if the
    // source existed.
    std::error_code ec;
    if (fs::lookup(saved_.obj, a.oldname, ec); ec) return false;
    if (t_.protect_rename(saved_.obj, a.oldname, cur_.obj, a.newname)) return false;
    redo_allowed_ = false;  // as for REMOVE
    touch(saved_.obj, a.oldname);
    touch(cur_.obj, a.newname);
    return true;
  }

  bool put_root() {
    std::error_code ec;
    fs::object root = sim_.server.exp.root().clone(ec);
    return !ec && set_current(std::move(root));
  }
  bool set_current(fs::object obj) {
    cur_.made = t_.made_here(obj);
    cur_.obj = std::move(obj);
    cur_.set = true;
    return true;
  }
  bool made_object() {
    cur_.obj = fs::object();
    cur_.made = cur_.set = true;
    return true;
  }
  static bool copy(const sim_fh& from, sim_fh& to) {
    std::error_code ec;
    to.obj = from.obj ? from.obj.clone(ec) : fs::object();
    to.made = from.made;
    to.set = from.set;
    return !ec;
  }
  /// A name in an existing directory that the operation may change: not hidden, and not
  /// changed by an operation planned before (its state then depends on that one running).
  bool named_change_ok(const fs::object& dir, const std::string& name) {
    return dir.is_directory() && !m_.hidden(dir, name) && !touched(dir, name);
  }
  static std::pair<std::uint64_t, std::uint64_t> key(const fs::object& o) {
    std::error_code ec;
    const fs::inode_id id = o.inode(ec);
    return {id.dev, id.ino};  // {0, 0} on failure
  }
  bool touched(const fs::object& dir, const std::string& name) const {
    return touched_.contains({key(dir), name});
  }
  void touch(const fs::object& dir, const std::string& name) { touched_.insert({key(dir), name}); }
  /// The locks the operation will take, taken now (a transaction keeps them to its end);
  /// with `named` those of the objects its names find (op_locks).
  template <class T>
  bool lock(const T& a, named_objects named = named_objects::all) {
    sim_.current.obj = cur_.obj ? cur_.obj.clone(ec_) : fs::object();
    sim_.saved.obj = saved_.obj ? saved_.obj.clone(ec_) : fs::object();
    if (ec_) return false;
    std::vector<lock_request> reqs;
    op_locks(nfs_argop4{a}, sim_, named, reqs);
    return reqs.empty() || m_.lock(t_, reqs) == nfs4::nfsstat4::NFS4_OK;
  }
  /// The exclusive lock op_locks' `named` takes on an object a name finds.
  bool lock_found(const fs::object& obj) {
    std::error_code ec;
    const fs::inode_id id = obj.inode(ec);
    if (ec) return false;
    const std::vector<lock_request> reqs{{object_key{id.dev, id.ino}, lock_mode::exclusive}};
    return m_.lock(t_, reqs) == nfs4::nfsstat4::NFS4_OK;
  }

  /// The backup a WRITE or an OPEN's truncation needs, made (or, for a file that uses redo,
  /// not made) by finish() once the whole COMPOUND is known. Its lock is taken already.
  bool defer_backup(const fs::object& file, std::uint64_t offset, std::uint64_t length) {
    std::error_code ec;
    fs::object f = file.clone(ec);
    if (ec) return false;
    deferred_.push_back({std::move(f), offset, length, op_});
    return true;
  }
  struct deferred_backup {
    fs::object file;
    std::uint64_t offset = 0, length = 0;
    std::size_t op = 0;  ///< its operation's index in the planned span
  };

  transaction& t_;
  compound_context sim_;  ///< for op_locks: the simulated current and saved objects
  manager& m_;
  sim_fh cur_, saved_;
  std::set<std::pair<std::pair<std::uint64_t, std::uint64_t>, std::string>> touched_;
  std::error_code ec_;
  bool attrs_set_ = false;  ///< a SETATTR was planned: lookups are not handed on (note_found)
  std::size_t op_ = 0;  ///< the index of the operation being planned
  std::vector<deferred_backup> deferred_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> no_redo_;  ///< files an operation reads
  bool redo_allowed_ = true;  ///< no REMOVE, RENAME or READDIR in the COMPOUND
};

}  // namespace

std::size_t plan(transaction& t, const compound_context& ctx, std::span<const nfs_argop4> ops) {
  t.begin_plan();
  std::size_t planned = 0;
  {
    planner p(t, ctx);
    while (planned < ops.size() && p.step(ops[planned], planned)) ++planned;
    planned = p.finish(planned, ops.size());
  }
  (void)t.end_plan();
  return planned;
}

}  // namespace vnfs::server::txn
