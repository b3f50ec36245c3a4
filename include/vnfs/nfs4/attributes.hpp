// vnfs NFSv4 layer: a typed view of file attributes (RFC 8881 §5) and its conversion
// to and from fattr4.
#pragma once

#include <optional>
#include <vector>

#include "vnfs/nfs4/types.hpp"

namespace vnfs::nfs4 {

/// One optional member per attribute this codec understands, named after the attribute
/// (FATTR4_SIZE -> size). An engaged member means "present".
struct attributes {
  std::optional<bitmap4> supported_attrs;          // 0
  std::optional<nfs_ftype4> type;                  // 1
  std::optional<std::uint32_t> fh_expire_type;     // 2  FH4_*
  std::optional<changeid4> change;                 // 3
  std::optional<std::uint64_t> size;               // 4
  std::optional<bool> link_support;                // 5
  std::optional<bool> symlink_support;             // 6
  std::optional<bool> named_attr;                  // 7
  std::optional<fsid4> fsid;                       // 8
  std::optional<bool> unique_handles;              // 9
  std::optional<nfs_lease4> lease_time;            // 10
  std::optional<nfsstat4> rdattr_error;            // 11
  std::optional<std::vector<nfsace4>> acl;         // 12
  std::optional<std::uint32_t> aclsupport;         // 13 ACL4_SUPPORT_*
  std::optional<bool> archive;                     // 14
  std::optional<bool> cansettime;                  // 15
  std::optional<bool> case_insensitive;            // 16
  std::optional<bool> case_preserving;             // 17
  std::optional<bool> chown_restricted;            // 18
  std::optional<nfs_fh4> filehandle;               // 19 (at most NFS4_FHSIZE bytes)
  std::optional<std::uint64_t> fileid;             // 20
  std::optional<std::uint64_t> files_avail;        // 21
  std::optional<std::uint64_t> files_free;         // 22
  std::optional<std::uint64_t> files_total;        // 23
  std::optional<bool> hidden;                      // 25
  std::optional<bool> homogeneous;                 // 26
  std::optional<std::uint64_t> maxfilesize;        // 27
  std::optional<std::uint32_t> maxlink;            // 28
  std::optional<std::uint32_t> maxname;            // 29
  std::optional<std::uint64_t> maxread;            // 30
  std::optional<std::uint64_t> maxwrite;           // 31
  std::optional<std::string> mimetype;             // 32
  std::optional<mode4> mode;                       // 33
  std::optional<bool> no_trunc;                    // 34
  std::optional<std::uint32_t> numlinks;           // 35
  std::optional<utf8str_mixed> owner;              // 36
  std::optional<utf8str_mixed> owner_group;        // 37
  std::optional<std::uint64_t> quota_avail_hard;   // 38
  std::optional<std::uint64_t> quota_avail_soft;   // 39
  std::optional<std::uint64_t> quota_used;         // 40
  std::optional<specdata4> rawdev;                 // 41
  std::optional<std::uint64_t> space_avail;        // 42
  std::optional<std::uint64_t> space_free;         // 43
  std::optional<std::uint64_t> space_total;        // 44
  std::optional<std::uint64_t> space_used;         // 45
  std::optional<bool> system;                      // 46
  std::optional<nfstime4> time_access;             // 47
  std::optional<settime4> time_access_set;         // 48 (write-only)
  std::optional<nfstime4> time_backup;             // 49
  std::optional<nfstime4> time_create;             // 50
  std::optional<nfstime4> time_delta;              // 51
  std::optional<nfstime4> time_metadata;           // 52
  std::optional<nfstime4> time_modify;             // 53
  std::optional<settime4> time_modify_set;         // 54 (write-only)
  std::optional<std::uint64_t> mounted_on_fileid;  // 55
  std::optional<nfsacl41> dacl;                    // 58
  std::optional<nfsacl41> sacl;                    // 59
  std::optional<std::vector<std::uint32_t>> fs_layout_types;  // 62 (layouttype4<>)
  std::optional<std::uint32_t> layout_blksize;     // 65
  std::optional<std::uint32_t> layout_alignment;   // 66
  std::optional<mode_masked4> mode_set_masked;     // 74 (write-only)
  std::optional<bitmap4> suppattr_exclcreat;       // 75
  std::optional<std::uint32_t> fs_charset_cap;     // 76
  std::optional<std::uint32_t> clone_blksize;      // 77
  std::optional<std::uint64_t> space_freed;        // 78
  std::optional<change_attr_type4> change_attr_type;  // 79

  bool operator==(const attributes&) const = default;
};

/// True when encode_attributes/decode_attributes know attribute number n.
bool is_known_attribute(unsigned n) noexcept;
/// All attribute numbers this codec knows.
const bitmap4& known_attributes() noexcept;

/// Encodes, in attribute-number order, the attributes that are both requested and present;
/// the returned attrmask has exactly those bits. Unknown requested bits are ignored.
fattr4 encode_attributes(const attributes& a, const bitmap4& requested);
/// Encodes every present attribute.
fattr4 encode_attributes(const attributes& a);
/// The bitmap of the present members of a.
bitmap4 present_attributes(const attributes& a);

/// Decodes every attribute in f.attrmask. Throws xdr::decode_error on a malformed value, on
/// trailing bytes, or on an attribute number it does not know (values cannot be skipped).
attributes decode_attributes(const fattr4& f);

}  // namespace vnfs::nfs4
