#include "client/nfs/attr_mapping.hpp"

#include <charconv>
#include <string>

#include "vnfs/nfs4/attributes.hpp"

namespace vnfs::detail {

using namespace vnfs::nfs4;

namespace {

std::uint32_t numeric_id(const std::optional<std::string>& s) {
  std::uint32_t v = 65534;
  if (s) std::from_chars(s->data(), s->data() + s->size(), v);
  return v;
}

file_type type_of(nfs_ftype4 t) {
  switch (t) {
    case nfs_ftype4::NF4REG: return file_type::regular;
    case nfs_ftype4::NF4DIR: return file_type::directory;
    case nfs_ftype4::NF4LNK: return file_type::symlink;
    case nfs_ftype4::NF4BLK: return file_type::block;
    case nfs_ftype4::NF4CHR: return file_type::character;
    case nfs_ftype4::NF4FIFO: return file_type::fifo;
    case nfs_ftype4::NF4SOCK: return file_type::socket;
    default: return file_type::unknown;
  }
}

timespec to_timespec(const std::optional<nfstime4>& t) {
  return t ? timespec{static_cast<time_t>(t->seconds), static_cast<long>(t->nseconds)} : timespec{};
}

settime4 client_time(const timespec& t) {
  settime4 s;
  s.set_it = time_how4::SET_TO_CLIENT_TIME4;
  s.time.seconds = t.tv_sec;
  s.time.nseconds = static_cast<std::uint32_t>(t.tv_nsec);
  return s;
}

}  // namespace

bitmap4 attr_request(unsigned mask) {
  bitmap4 b;
  b.set(FATTR4_TYPE);
  if (mask & attr::mode) b.set(FATTR4_MODE);
  if (mask & attr::nlink) b.set(FATTR4_NUMLINKS);
  if (mask & attr::uid) b.set(FATTR4_OWNER);
  if (mask & attr::gid) b.set(FATTR4_OWNER_GROUP);
  if (mask & attr::size) b.set(FATTR4_SIZE);
  if (mask & attr::space_used) b.set(FATTR4_SPACE_USED);
  if (mask & attr::fileid) b.set(FATTR4_FILEID);
  if (mask & attr::change) b.set(FATTR4_CHANGE);
  if (mask & attr::atime) b.set(FATTR4_TIME_ACCESS);
  if (mask & attr::mtime) b.set(FATTR4_TIME_MODIFY);
  if (mask & attr::ctime) b.set(FATTR4_TIME_METADATA);
  if (mask & attr::handle) b.set(FATTR4_FILEHANDLE);
  return b;
}

file_stat to_stat(const fattr4& f) {
  attributes a = decode_attributes(f);
  file_stat s;
  s.type = a.type ? type_of(*a.type) : file_type::unknown;
  s.mode = a.mode.value_or(0) & 07777;
  s.nlink = a.numlinks.value_or(0);
  s.uid = numeric_id(a.owner);
  s.gid = numeric_id(a.owner_group);
  s.size = a.size.value_or(0);
  s.space_used = a.space_used.value_or(0);
  s.fileid = a.fileid.value_or(0);
  s.change = a.change.value_or(0);
  s.atime = to_timespec(a.time_access);
  s.mtime = to_timespec(a.time_modify);
  s.ctime = to_timespec(a.time_metadata);
  return s;
}

fattr4 settable_attrs(unsigned mask, const file_stat& v) {
  attributes a;
  if (mask & attr::mode) a.mode = v.mode & 07777;
  if (mask & attr::uid) a.owner = std::to_string(v.uid);
  if (mask & attr::gid) a.owner_group = std::to_string(v.gid);
  if (mask & attr::size) a.size = v.size;
  if (mask & attr::atime) a.time_access_set = client_time(v.atime);
  if (mask & attr::mtime) a.time_modify_set = client_time(v.mtime);
  return encode_attributes(a);
}

}  // namespace vnfs::detail
