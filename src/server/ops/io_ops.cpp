// Data operations: READ, WRITE, COMMIT (RFC 8881 §18.22, §18.32, §18.3) and the NFSv4.2
// intra-server COPY (RFC 7862 §15.2).
//
// Stateids. READ/WRITE/COPY accept the special anonymous stateid (subject to share
// reservations: NFS4ERR_LOCKED when an open denies the access, §9.7), the READ-bypass
// stateid (all ones: reads ignore deny modes; for a write it counts as anonymous), the
// "current" stateid, and open or lock stateids of the session's client for the current file.
// Byte-range locks are advisory: READ/WRITE are not checked against them (mandatory
// locking is optional in RFC 8881 §9.1 and not implemented).
//
// Data path. An open stateid carries the descriptors OPEN opened (open_state_table), so
// READ/WRITE do no open(2); the special stateids fall back to the fs layer, which checks
// each call against the caller's identity (a WRITE by opening the file, a READ by opening it
// or, once an earlier READ kept a descriptor with the object, by faccessat). READ data goes
// into a buffer of the server's payload_buffers, owned by a shared_ptr kept alive in
// ctx.keepalive, and the result refers to it (no copy before the socket); or, for
// a large READ where ctx.file_payloads allows it, stays in the file: the result names the
// range (its length from the file's size now), the descriptor is kept alive in
// ctx.keepalive, and the TCP connection sends the range from the page cache.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "server/fs/attributes.hpp"
#include "server/fs/detail.hpp"
#include "server/fs/io.hpp"
#include "server/ops/handlers.hpp"
#include "server/ops/status_mapping.hpp"
#include "server/txn/transaction.hpp"

namespace vnfs::server {

using nfs4::nfsstat4;

namespace {

/// The largest READ payload: 1 MiB, or less if the session's fore channel cannot carry it.
constexpr std::uint32_t max_read = 1u << 20;
/// What a READ reply needs besides the data (RPC and COMPOUND headers, SEQUENCE, PUTFH's
/// status, READ's own fields), generously.
constexpr std::uint32_t read_reply_overhead = 1024;

/// The least READ payload left in its file (ctx.file_payloads): below it, reading into
/// memory costs less than the system calls of sending a range apart.
constexpr std::size_t min_file_payload = 64 * 1024;

/// Answers a READ of `count` bytes at `offset` with its payload left in the file, if
/// that payload is at least min_file_payload bytes long and all in the page cache (sending
/// it must not wait for the disk: a network thread may be the one that sends); false
/// (nothing changed but the reader an object may now keep) to read into memory instead.
bool read_in_place(compound_context& ctx, const data_fd& fd, std::uint64_t offset, std::uint32_t count,
                   nfs4::READ4res& res) {
  std::error_code ec;
  const int from = fd ? fd->get() : fs::reader(ctx.current.obj, ec, ctx.current.ctime);
  if (from < 0) return false;  // the read into memory meets the same error and reports it
  const fs::read_result r = fs::extent(from, offset, count, ec);
  if (ec || r.count < min_file_payload || !fs::in_page_cache(from, offset, r.count)) return false;
  res.status = nfsstat4::NFS4_OK;
  res.resok4.eof = r.eof;
  res.resok4.file = {from, offset, r.count};
  if (fd)
    ctx.keepalive.push_back(fd);
  else
    ctx.keepalive.push_back(std::make_shared<const fs::object>(ctx.current.obj.share()));
  return true;
}

nfsstat4 require_regular(const held_fh& h) {
  if (!h) return nfsstat4::NFS4ERR_NOFILEHANDLE;
  switch (h.obj.type()) {
    case fs::file_type::regular: return nfsstat4::NFS4_OK;
    case fs::file_type::directory: return nfsstat4::NFS4ERR_ISDIR;
    case fs::file_type::symlink: return nfsstat4::NFS4ERR_SYMLINK;
    default: return nfsstat4::NFS4ERR_WRONG_TYPE;
  }
}

/// Validates `in` for I/O on `h` (regular file) and, for open/lock stateids, hands out the
/// descriptor OPEN cached (null: use the fs layer).
nfsstat4 validate_io(const compound_context& ctx, const held_fh& h, const nfs4::stateid4& in,
                     bool write, data_fd& fd) {
  fd.reset();
  if (nfsstat4 st = require_regular(h); st != nfsstat4::NFS4_OK) return st;
  nfs4::stateid4 sid;
  if (nfsstat4 st = ctx.resolve_stateid(in, sid); st != nfsstat4::NFS4_OK) return st;
  if (sid.is_invalid() || sid.is_current()) return nfsstat4::NFS4ERR_BAD_STATEID;
  std::error_code ec;
  const file_key key = open_state_table::key_of(h.obj, ec);
  if (ec) return to_nfsstat(ec);
  if (sid.is_bypass() && !write) return nfsstat4::NFS4_OK;
  if (sid.is_anonymous() || sid.is_bypass())
    return ctx.server.opens.check_anonymous_io(key, write);
  open_state_table::io_grant g;
  nfsstat4 st = ctx.server.opens.check_io(ctx.clientid, key, sid, write, g);
  fd = std::move(g.fd);
  return st;
}

fs::stability stability_of(nfs4::stable_how4 s) {
  switch (s) {
    case nfs4::stable_how4::DATA_SYNC4: return fs::stability::data_sync;
    case nfs4::stable_how4::FILE_SYNC4: return fs::stability::file_sync;
    default: return fs::stability::unstable;
  }
}

int rwf_flags(nfs4::stable_how4 s) {
  switch (s) {
    case nfs4::stable_how4::DATA_SYNC4: return RWF_DSYNC;
    case nfs4::stable_how4::FILE_SYNC4: return RWF_SYNC;
    default: return 0;
  }
}

/// Ends the file behind `fd` at `size`, where the bytes a WRITE at offset 0 just put over
/// its old ones end (compound_context::truncation), as durable as that WRITE was asked to
/// be: a stable one (its data already on disk) syncs the cut too, if there was one to make.
std::error_code end_after_overwrite(int fd, std::size_t size, nfs4::stable_how4 s) {
  if (s != nfs4::stable_how4::UNSTABLE4) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fs::last_error();
    if (static_cast<std::uint64_t>(st.st_size) <= size) return {};  // nothing past them
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return fs::last_error();
  if (s == nfs4::stable_how4::UNSTABLE4) return {};
  const int synced = s == nfs4::stable_how4::FILE_SYNC4 ? ::fsync(fd) : ::fdatasync(fd);
  return synced == 0 ? std::error_code() : fs::last_error();
}

}  // namespace

nfs4::READ4res handle(compound_context& ctx, const nfs4::READ4args& a) {
  nfs4::READ4res res;
  data_fd fd;
  if ((res.status = validate_io(ctx, ctx.current, a.stateid, false, fd)) != nfsstat4::NFS4_OK)
    return res;

  std::uint32_t count = std::min(a.count, max_read);
  if (ctx.sess) {
    const std::uint32_t limit = ctx.sess->fore.ca_maxresponsesize;
    if (limit > read_reply_overhead) count = std::min(count, limit - read_reply_overhead);
  }
  const std::uint64_t max_size = ctx.server.exp.max_file_size();  // no file has bytes past it
  if (a.offset >= max_size) count = 0;
  else count = static_cast<std::uint32_t>(std::min<std::uint64_t>(count, max_size - a.offset));

  if (ctx.file_payloads && count >= min_file_payload && read_in_place(ctx, fd, a.offset, count, res)) return res;

  std::shared_ptr<std::byte[]> buf = ctx.server.payloads.get(count);
  std::error_code ec;
  fs::read_result r;
  const std::span<std::byte> span(buf.get(), count);
  if (fd)
    r = fs::read_at(fd->get(), a.offset, span, ec);
  else
    r = fs::read(ctx.current.obj, a.offset, span, ec, ctx.current.ctime);
  if (ec) {
    res.status = to_nfsstat(ec);
    return res;
  }
  res.status = nfsstat4::NFS4_OK;
  res.resok4.eof = r.eof;
  res.resok4.data = xdr::bytes_view(buf.get(), r.count);
  ctx.keepalive.push_back(std::move(buf));
  return res;
}

nfsstat4 finish_truncation(compound_context& ctx) {
  if (!ctx.truncation) return nfsstat4::NFS4_OK;
  const compound_context::pending_truncation t = std::move(*ctx.truncation);
  ctx.truncation.reset();
  fs::detail::drop_create_verifier(t.file, t.fd->get());
  return ::ftruncate(t.fd->get(), 0) == 0 ? nfsstat4::NFS4_OK : to_nfsstat(fs::last_error());
}

nfs4::WRITE4res handle(compound_context& ctx, const nfs4::WRITE4args& a) {
  nfs4::WRITE4res res;
  data_fd fd;
  res.status = validate_io(ctx, ctx.current, a.stateid, true, fd);
  const auto wrote = [&](std::size_t written) {
    res.status = nfsstat4::NFS4_OK;
    res.resok4.count = static_cast<nfs4::count4>(written);
    res.resok4.committed = a.stable;
    res.resok4.writeverf = ctx.server.write_verifier;
    return res;
  };
  if (res.status == nfsstat4::NFS4_OK && ctx.txn && ctx.txn->redo_for(ctx.current.obj)) {
    // Deferred to the commit (txn/transaction.hpp, redo): the file does not change before.
    // (No append: the planner leaves a file appended to to undo.) defer_write refuses what
    // could not be applied: past the largest file (NFS4ERR_FBIG), past the space.
    if (std::error_code ec = ctx.txn->defer_write(ctx.current.obj, fd, a.offset, a.data)) res.status = to_nfsstat(ec);
    else return wrote(a.data.size());
    return res;
  }
  if (res.status == nfsstat4::NFS4_OK && ctx.txn)
    if (std::error_code ec = ctx.txn->protect_data(ctx.current.obj, a.offset, a.data.size()))
      res.status = to_nfsstat(ec);
  // The truncation the OPEN before left to this WRITE (compound_context::truncation): done
  // by writing over the old bytes and cutting the file after them, where that is this
  // WRITE; else first, as the OPEN would have done it.
  const bool over_old = ctx.truncation && res.status == nfsstat4::NFS4_OK && fd && a.offset == 0;
  if (over_old) ctx.truncation.reset();
  else if (nfsstat4 st = finish_truncation(ctx); st != nfsstat4::NFS4_OK) res.status = st;
  if (res.status != nfsstat4::NFS4_OK) return res;

  std::error_code ec;
  std::size_t written = 0;
  if (a.offset == nfs4::NFS4_UINT64_MAX) {
    // vNFS append extension (Chen et al., "vNFS: Maximizing NFS Performance with Compounds
    // and Vectorized I/O", FAST '17): a WRITE at offset 2^64-1, an offset no real write can
    // use, appends the data atomically at the end of the file, so concurrent appenders
    // need neither locks nor a GETATTR of the size first.
    if (fd) {
      fs::detail::drop_create_verifier(ctx.current.obj, fd->get());
      written = fs::write_at(fd->get(), -1, a.data, RWF_APPEND | rwf_flags(a.stable), ec);
    } else {
      written = fs::append(ctx.current.obj, a.data, stability_of(a.stable), ec).count;
    }
  } else {
    if (const std::uint64_t max_size = ctx.server.exp.max_file_size();
        a.offset > max_size || a.data.size() > max_size - a.offset) {
      res.status = nfsstat4::NFS4ERR_FBIG;
      return res;
    }
    // In a transaction, whose commit fsyncs every file it wrote, the device starts on the
    // bytes now, while the rest of the transaction arrives: the commit waits only for the tail.
    // Not for smaller writes: the commit writes many of them back in one go (syncfs), for less
    // than the system call each would cost here. (bench/txn_overhead, one client overwriting
    // files of one size, 64 per COMPOUND at 64 KiB: starting each write's writeback made
    // transactional overwrites of 64 KiB files 10 % and of 128 KiB files 6 % slower, and of
    // 256 KiB files 12 % faster.)
    constexpr std::size_t early_from = 256 * 1024;
    const bool early = ctx.txn && a.stable == nfs4::stable_how4::UNSTABLE4 && a.data.size() >= early_from;
    if (fd) {
      fs::detail::drop_create_verifier(ctx.current.obj, fd->get());
      written = fs::write_at(fd->get(), static_cast<std::int64_t>(a.offset), a.data,
                         rwf_flags(a.stable), ec);
      // The file ends where the new bytes do (also when none were written: then the
      // truncation is all that happened).
      if (over_old)
        if (std::error_code cut = end_after_overwrite(fd->get(), written, a.stable); cut && !ec) {
          ec = cut;
          written = 0;
        }
      if (early && written > 0) fs::start_writeback(fd->get(), a.offset, written);
    } else {
      written = fs::write(ctx.current.obj, a.offset, a.data,
                          early ? fs::stability::writeback : stability_of(a.stable), ec);
    }
  }
  // A short write that made progress is reported as such; the client retries the rest. Not
  // in a transaction: the rest could not follow it (a single-COMPOUND one commits with this
  // COMPOUND), so the WRITE fails and the transaction rolls back, with the bytes that landed.
  if (ec && (written == 0 || ctx.txn)) {
    res.status = to_nfsstat(ec);
    return res;
  }
  return wrote(written);
}

nfs4::COMMIT4res handle(compound_context& ctx, const nfs4::COMMIT4args&) {
  nfs4::COMMIT4res res;
  if ((res.status = require_regular(ctx.current)) != nfsstat4::NFS4_OK) return res;
  // The whole file is flushed whatever range was asked (§18.3.3 allows it); fdatasync
  // covers the metadata needed to read the data back (the size).
  std::error_code ec;
  fs::sync(ctx.current.obj, true, ec);
  if (ec) {
    res.status = to_nfsstat(ec);
    return res;
  }
  res.status = nfsstat4::NFS4_OK;
  res.resok4.writeverf = ctx.server.write_verifier;
  return res;
}

nfs4::COPY4res handle(compound_context& ctx, const nfs4::COPY4args& a) {
  nfs4::COPY4res res;
  auto fail = [&](nfsstat4 st) {
    res.status = st;
    return res;
  };
  // Inter-server copy (RFC 7862 §4) needs COPY_NOTIFY and a server-to-server mount.
  if (!a.ca_source_server.empty()) return fail(nfsstat4::NFS4ERR_NOTSUPP);
  if (!ctx.saved || !ctx.current) return fail(nfsstat4::NFS4ERR_NOFILEHANDLE);
  data_fd unused;
  if (nfsstat4 st = validate_io(ctx, ctx.saved, a.ca_src_stateid, false, unused);
      st != nfsstat4::NFS4_OK)
    return fail(st);
  if (nfsstat4 st = validate_io(ctx, ctx.current, a.ca_dst_stateid, true, unused);
      st != nfsstat4::NFS4_OK)
    return fail(st);

  // §15.2.3: the source range must lie within the source file; a count of 0 means "to
  // its end". Overlapping ranges of one file are refused as well.
  struct ::stat src_st {}, dst_st {};
  if (::fstat(ctx.saved.obj.fd(), &src_st) != 0 || ::fstat(ctx.current.obj.fd(), &dst_st) != 0)
    return fail(to_nfsstat(fs::sys_error(errno)));
  const std::uint64_t src_size = static_cast<std::uint64_t>(src_st.st_size);
  if (a.ca_src_offset > src_size) return fail(nfsstat4::NFS4ERR_INVAL);
  std::uint64_t count = a.ca_count;
  if (count == 0) count = src_size - a.ca_src_offset;
  else if (count > src_size - a.ca_src_offset) return fail(nfsstat4::NFS4ERR_INVAL);
  if (const std::uint64_t max_size = ctx.server.exp.max_file_size();
      a.ca_dst_offset > max_size || count > max_size - a.ca_dst_offset)
    return fail(nfsstat4::NFS4ERR_FBIG);
  if (src_st.st_dev == dst_st.st_dev && src_st.st_ino == dst_st.st_ino &&
      a.ca_src_offset < a.ca_dst_offset + count && a.ca_dst_offset < a.ca_src_offset + count)
    return fail(nfsstat4::NFS4ERR_INVAL);

  std::uint64_t copied = 0;
  if (count != 0) {
    if (ctx.txn) {
      // The source's atime moves when it is read: restored too on rollback.
      std::error_code ec = ctx.txn->protect_attrs(ctx.saved.obj);
      if (!ec) ec = ctx.txn->protect_data(ctx.current.obj, a.ca_dst_offset, count);
      if (ec) return fail(to_nfsstat(ec));
    }
    std::error_code ec;
    copied = fs::copy(ctx.saved.obj, a.ca_src_offset, ctx.current.obj, a.ca_dst_offset, count, ec);
    if (ec && copied == 0) return fail(to_nfsstat(ec));
  }
  // Always synchronous (an asynchronous request may be answered synchronously, §15.2.3):
  // no callback id; the data is in the page cache, so UNSTABLE4 with the write verifier.
  res.status = nfsstat4::NFS4_OK;
  res.resok4.cr_response.wr_callback_id.reset();
  res.resok4.cr_response.wr_count = copied;
  res.resok4.cr_response.wr_committed = nfs4::stable_how4::UNSTABLE4;
  res.resok4.cr_response.wr_writeverf = ctx.server.write_verifier;
  res.resok4.cr_requirements.cr_consecutive = true;
  res.resok4.cr_requirements.cr_synchronous = true;
  return res;
}

}  // namespace vnfs::server
