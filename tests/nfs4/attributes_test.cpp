// The typed attribute view <-> fattr4.
#include "test_util.hpp"

using namespace nfs4_test;

namespace {
attributes full_set() {
  attributes a;
  a.supported_attrs = bitmap4::of({0, 1, 3, 4, 33, 75});
  a.type = nfs_ftype4::NF4REG;
  a.fh_expire_type = FH4_PERSISTENT;
  a.change = 77;
  a.size = 1ULL << 33;
  a.link_support = true;
  a.symlink_support = true;
  a.named_attr = false;
  a.fsid = fsid4{3, 4};
  a.unique_handles = true;
  a.lease_time = 90;
  a.rdattr_error = nfsstat4::NFS4ERR_ACCESS;
  a.acl = std::vector<nfsace4>{{0, 0, ACE4_READ_DATA, "OWNER@"}};
  a.aclsupport = ACL4_SUPPORT_ALLOW_ACL;
  a.archive = false;
  a.cansettime = true;
  a.case_insensitive = false;
  a.case_preserving = true;
  a.chown_restricted = true;
  a.filehandle = B({1, 2, 3});
  a.fileid = 12345;
  a.files_avail = 1;
  a.files_free = 2;
  a.files_total = 3;
  a.hidden = false;
  a.homogeneous = true;
  a.maxfilesize = NFS4_MAXFILELEN;
  a.maxlink = 65000;
  a.maxname = 255;
  a.maxread = 1 << 20;
  a.maxwrite = 1 << 20;
  a.mimetype = "text/plain";
  a.mode = 0644;
  a.no_trunc = true;
  a.numlinks = 2;
  a.owner = "1000";
  a.owner_group = "100";
  a.quota_avail_hard = 9;
  a.quota_avail_soft = 8;
  a.quota_used = 7;
  a.rawdev = specdata4{8, 1};
  a.space_avail = 10;
  a.space_free = 11;
  a.space_total = 12;
  a.space_used = 4096;
  a.system = false;
  a.time_access = nfstime4{1, 2};
  a.time_access_set = settime4{time_how4::SET_TO_SERVER_TIME4, {}};
  a.time_backup = nfstime4{3, 4};
  a.time_create = nfstime4{5, 6};
  a.time_delta = nfstime4{0, 1};
  a.time_metadata = nfstime4{7, 8};
  a.time_modify = nfstime4{9, 10};
  a.time_modify_set = settime4{time_how4::SET_TO_CLIENT_TIME4, {11, 12}};
  a.mounted_on_fileid = 2;
  a.dacl = nfsacl41{ACL4_AUTO_INHERIT, {{1, 2, 3, "x"}}};
  a.sacl = nfsacl41{0, {}};
  a.fs_layout_types = std::vector<std::uint32_t>{1};
  a.layout_blksize = 4096;
  a.layout_alignment = 512;
  a.mode_set_masked = mode_masked4{0700, 0777};
  a.suppattr_exclcreat = bitmap4::of({4, 33});
  a.fs_charset_cap = 2;
  a.clone_blksize = 4096;
  a.space_freed = 0;
  a.change_attr_type = change_attr_type4::NFS4_CHANGE_TYPE_IS_VERSION_COUNTER;
  return a;
}
}  // namespace

TEST_CASE("every known attribute round trips") {
  attributes a = full_set();
  fattr4 f = encode_attributes(a);
  CHECK(f.attrmask == known_attributes());
  CHECK(present_attributes(a) == known_attributes());
  CHECK(decode_attributes(f) == a);
  CHECK(xdr::from_bytes<fattr4>(xdr::to_bytes(f)) == f);
}

TEST_CASE("encode_attributes writes requested and present attributes in number order") {
  attributes a;
  a.mode = 0644;
  a.type = nfs_ftype4::NF4REG;
  a.size = 4096;
  a.owner = "me";  // present but not requested
  bitmap4 req = bitmap4::of({FATTR4_MODE, FATTR4_SIZE, FATTR4_TYPE, FATTR4_FILEID /* absent */,
                             FATTR4_FS_LOCATIONS /* unknown */});
  fattr4 f = encode_attributes(a, req);
  CHECK(f.attrmask.words == std::vector<std::uint32_t>{(1u << 1) | (1u << 4), 1u << 1});
  CHECK(f.attr_vals == B({0, 0, 0, 1,                    // type NF4REG
                          0, 0, 0, 0, 0, 0, 0x10, 0,     // size 4096
                          0, 0, 0x01, 0xa4}));           // mode 0644
  attributes back = decode_attributes(f);
  CHECK(back.type == nfs_ftype4::NF4REG);
  CHECK(back.size == 4096u);
  CHECK(back.mode == 0644u);
  CHECK_FALSE(back.owner.has_value());
  CHECK(encode_attributes(attributes{}, req) == fattr4{});
}

TEST_CASE("decode_attributes rejects what it cannot decode") {
  // An attribute number without a decoder: its value cannot be skipped.
  CHECK_THROWS_AS(decode_attributes({bitmap4::of({FATTR4_FS_LOCATIONS}), B({0, 0, 0, 0, 0, 0, 0, 0})}),
                  xdr::decode_error);
  CHECK_THROWS_AS(decode_attributes({bitmap4::of({200}), {}}), xdr::decode_error);
  // Truncated value, trailing bytes, malformed bool, over-long filehandle.
  CHECK_THROWS_AS(decode_attributes({bitmap4::of({FATTR4_SIZE}), B({0, 0, 0, 0})}), xdr::decode_error);
  CHECK_THROWS_AS(decode_attributes({bitmap4::of({FATTR4_MODE}), B({0, 0, 0, 1, 0, 0, 0, 0})}),
                  xdr::decode_error);
  CHECK_THROWS_AS(decode_attributes({bitmap4::of({FATTR4_LINK_SUPPORT}), B({0, 0, 0, 2})}),
                  xdr::decode_error);
  attributes fh;
  fh.filehandle = std::vector<std::byte>(NFS4_FHSIZE + 1);
  CHECK_THROWS_AS(decode_attributes(encode_attributes(fh)), xdr::decode_error);
  CHECK(decode_attributes(fattr4{}) == attributes{});
}

TEST_CASE("known attribute set") {
  CHECK(is_known_attribute(FATTR4_SUPPORTED_ATTRS));
  CHECK(is_known_attribute(FATTR4_TIME_CREATE));
  CHECK(is_known_attribute(FATTR4_SUPPATTR_EXCLCREAT));
  CHECK_FALSE(is_known_attribute(FATTR4_FS_LOCATIONS));
  CHECK_FALSE(is_known_attribute(FATTR4_SEC_LABEL));
  CHECK(known_attributes().bits().size() == 66);
}
