// vnfs client, nfs backend: the vectorized calls as planned COMPOUNDs (compound_planner.hpp)
// — what each item becomes:
//   vread/vwrite by path   OPEN (CLAIM_NULL; with OPEN4_CREATE for vio_flags::create), the
//                          READs/WRITEs with the current stateid, CLOSE; consecutive items
//                          on one path share the OPEN and CLOSE
//   ... by open file       PUTFH, READ/WRITE with the file's stateid
//   ... by file handle     PUTFH, READ/WRITE with the anonymous stateid
//   vgetattrs/vsetattrs    LOOKUP, GETATTR (GETFH for attr::handle) / SETATTR
//   vmkdir, vsymlink       CREATE;   vremove: REMOVE;   vreadlink: LOOKUP, READLINK
//   vrename, vhardlink     RENAME / LINK, with the source in the saved filehandle
//   vopen, vclose          OPEN, GETFH / (COMMIT,) CLOSE
//   vreaddir               READDIR (one page per directory)
//   vscopy                 OPENs of sources and destinations, then COPY, then CLOSEs
// each after the navigation the planner adds. READ payload arrives in the reply buffer and
// is copied into the item's memory (counted in payload_bytes_copied).
#pragma once

#include <functional>
#include <span>

#include "client/backend.hpp"
#include "client/nfs/compound_planner.hpp"
#include "client/nfs/session_engine.hpp"

namespace vnfs::detail {

class compound_vectors {
 public:
  /// `next_owner` gives a fresh open-owner for each OPEN; `window_bytes` bounds the bytes of
  /// one call's COMPOUNDs in flight (client_options::vector_window_bytes); with `atomic`, the
  /// mutating calls run as transactions (client_options::atomic_vectors).
  compound_vectors(session_engine& engine, const nfs4::nfs_fh4& root, std::function<nfs4::open_owner4()> next_owner,
                   std::size_t window_bytes, bool atomic = false)
      : engine_(engine), root_(root), next_owner_(std::move(next_owner)), window_bytes_(window_bytes), atomic_(atomic) {}
  /// Every call's COMPOUNDs join the open transaction `join` (vnfs::transaction; see
  /// run_planned); with `commit_last`, a call's last COMPOUND commits it.
  compound_vectors(session_engine& engine, const nfs4::nfs_fh4& root, std::function<nfs4::open_owner4()> next_owner,
                   std::size_t window_bytes, std::shared_ptr<txn_link> join, bool commit_last = false)
      : engine_(engine), root_(root), next_owner_(std::move(next_owner)), window_bytes_(window_bytes), atomic_(false),
        join_(std::move(join)), commit_last_(commit_last) {}

  void vopen(std::span<vopen_item> items, vresult* out, done_fn done);
  void vclose(std::span<const file> files, vresult* out, done_fn done);
  void vread(std::span<vio> items, vresult* out, done_fn done);
  void vwrite(std::span<vio> items, vresult* out, done_fn done);
  void vgetattrs(std::span<vattr> items, vresult* out, done_fn done);
  void vsetattrs(std::span<const vattr> items, vresult* out, done_fn done);
  void vmkdir(std::span<const vmkdir_item> items, vresult* out, done_fn done);
  void vsymlink(std::span<const vlink> items, vresult* out, done_fn done);
  void vhardlink(std::span<const vlink> items, vresult* out, done_fn done);
  void vreadlink(std::span<const std::string> paths, std::string* targets, vresult* out, done_fn done);
  void vremove(std::span<const std::string> paths, vresult* out, done_fn done);
  void vrename(std::span<const vrename_item> items, vresult* out, done_fn done);
  void vreaddir(std::span<dir_stream* const> dirs, unsigned mask, vresult* out, done_fn done);
  void vscopy(std::span<vcopy_item> items, vresult* out, done_fn done);

 private:
  void io(std::span<vio> items, bool writing, vresult* out, done_fn done);
  /// run_planned for a mutating call: transactional with atomic_.
  void run_mutating(std::vector<planned_item> plan, std::size_t n, vresult* out, done_fn done);

  session_engine& engine_;
  const nfs4::nfs_fh4& root_;
  std::function<nfs4::open_owner4()> next_owner_;
  std::size_t window_bytes_;
  bool atomic_;
  std::shared_ptr<txn_link> join_;
  bool commit_last_ = false;
};

}  // namespace vnfs::detail
