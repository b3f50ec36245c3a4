// GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS — against vnfsd and, where RFC 8881 fixes the
// answer, NFS-Ganesha.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ops_fixture.hpp"

using namespace vnfs::ops_test;
using vnfs::test::server_kind;

namespace {

nfstime4 mtime_of(const struct stat& st) {
  return {st.st_mtim.tv_sec, static_cast<std::uint32_t>(st.st_mtim.tv_nsec)};
}
nfstime4 atime_of(const struct stat& st) {
  return {st.st_atim.tv_sec, static_cast<std::uint32_t>(st.st_atim.tv_nsec)};
}
nfstime4 ctime_of(const struct stat& st) {
  return {st.st_ctim.tv_sec, static_cast<std::uint32_t>(st.st_ctim.tv_nsec)};
}

bitmap4 all_attributes() {
  bitmap4 m;
  for (unsigned n = 0; n <= FATTR4_SUPPATTR_EXCLCREAT; ++n)
    if (is_known_attribute(n) && n != FATTR4_TIME_ACCESS_SET && n != FATTR4_TIME_MODIFY_SET &&
        n != FATTR4_MODE_SET_MASKED)
      m.set(n);
  return m;
}

SETATTR4args setattr(const attributes& a, stateid4 sid = stateid4::anonymous()) {
  return SETATTR4args{sid, encode_attributes(a)};
}

}  // namespace

TEST_CASE("GETATTR of a regular file") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "hello", 0640);
  const struct stat st = lstat_of(w / "f");
  const struct stat dst = lstat_of(w.path());
  const nfs_fh4 fh = w.fh("f");

  attributes a = w.getattr("f", all_attributes());
  attributes d = w.getattr("", bitmap4::of({FATTR4_FSID}));
  CHECK(a.type == nfs_ftype4::NF4REG);
  CHECK(a.size == 5u);
  CHECK(a.mode == 0640u);
  CHECK(a.numlinks == 1u);
  CHECK(a.fileid == static_cast<std::uint64_t>(st.st_ino));
  CHECK(a.space_used == static_cast<std::uint64_t>(st.st_blocks) * 512);
  CHECK(a.time_modify == mtime_of(st));
  CHECK(a.time_access == atime_of(st));
  CHECK(a.time_metadata == ctime_of(st));
  CHECK(a.filehandle == fh);
  CHECK(a.rdattr_error == nfsstat4::NFS4_OK);
  REQUIRE(a.fsid);
  CHECK(a.fsid == d.fsid);  // one file system per export
  CHECK(a.link_support == true);
  CHECK(a.symlink_support == true);
  REQUIRE(a.supported_attrs);
  for (unsigned n : {FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE, FATTR4_FH_EXPIRE_TYPE, FATTR4_CHANGE,
                     FATTR4_SIZE, FATTR4_LINK_SUPPORT, FATTR4_SYMLINK_SUPPORT,
                     FATTR4_NAMED_ATTR, FATTR4_FSID, FATTR4_UNIQUE_HANDLES, FATTR4_LEASE_TIME,
                     FATTR4_RDATTR_ERROR, FATTR4_FILEHANDLE, FATTR4_SUPPATTR_EXCLCREAT}) {
    INFO("mandatory attribute " << n);
    CHECK(a.supported_attrs->test(n));
  }
  CHECK(a.owner.has_value());
  CHECK(a.owner_group.has_value());

  if (kind == server_kind::vnfsd) {
    const bitmap4 expected = bitmap4::of(
        {FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE, FATTR4_FH_EXPIRE_TYPE, FATTR4_CHANGE, FATTR4_SIZE,
         FATTR4_LINK_SUPPORT, FATTR4_SYMLINK_SUPPORT, FATTR4_NAMED_ATTR, FATTR4_FSID,
         FATTR4_UNIQUE_HANDLES, FATTR4_LEASE_TIME, FATTR4_RDATTR_ERROR, FATTR4_ACLSUPPORT,
         FATTR4_CANSETTIME, FATTR4_CASE_INSENSITIVE, FATTR4_CASE_PRESERVING,
         FATTR4_CHOWN_RESTRICTED, FATTR4_FILEHANDLE, FATTR4_FILEID, FATTR4_FILES_AVAIL,
         FATTR4_FILES_FREE, FATTR4_FILES_TOTAL, FATTR4_HOMOGENEOUS, FATTR4_MAXFILESIZE,
         FATTR4_MAXLINK, FATTR4_MAXNAME, FATTR4_MAXREAD, FATTR4_MAXWRITE, FATTR4_MODE,
         FATTR4_NO_TRUNC, FATTR4_NUMLINKS, FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_RAWDEV,
         FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE, FATTR4_SPACE_TOTAL, FATTR4_SPACE_USED,
         FATTR4_TIME_ACCESS, FATTR4_TIME_ACCESS_SET, FATTR4_TIME_CREATE, FATTR4_TIME_DELTA,
         FATTR4_TIME_METADATA, FATTR4_TIME_MODIFY, FATTR4_TIME_MODIFY_SET,
         FATTR4_MOUNTED_ON_FILEID, FATTR4_SUPPATTR_EXCLCREAT});
    CHECK(a.supported_attrs == expected);
    CHECK(a.named_attr == false);
    CHECK(a.owner == std::to_string(st.st_uid));
    CHECK(a.owner_group == std::to_string(st.st_gid));
    CHECK(a.change == static_cast<std::uint64_t>(st.st_ctim.tv_sec) * 1000000000u +
                          static_cast<std::uint64_t>(st.st_ctim.tv_nsec));
    CHECK(a.fh_expire_type == FH4_PERSISTENT);
    CHECK(a.unique_handles == true);
    CHECK(a.lease_time == 90u);  // vnfsd's default lease
    CHECK(a.aclsupport == 0u);
    CHECK(a.cansettime == true);
    CHECK(a.case_insensitive == false);
    CHECK(a.case_preserving == true);
    CHECK(a.chown_restricted == true);
    CHECK(a.homogeneous == true);
    CHECK(a.no_trunc == true);
    CHECK(a.maxname == 255u);
    {
      // Exactly the largest size the export's file system lets a file have.
      REQUIRE(a.maxfilesize);
      const int probe = ::open(w.path().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
      REQUIRE(probe >= 0);
      CHECK(::ftruncate(probe, static_cast<off_t>(*a.maxfilesize)) == 0);
      if (*a.maxfilesize < 0x7fffffffffffffffULL) CHECK(::ftruncate(probe, static_cast<off_t>(*a.maxfilesize + 1)) != 0);
      ::close(probe);
    }
    CHECK(a.fsid == fsid4{major(dst.st_dev), minor(dst.st_dev)});
    CHECK(a.mounted_on_fileid == a.fileid);
    CHECK(a.time_delta == nfstime4{0, 1});
    CHECK(a.rawdev == specdata4{0, 0});
    // The session negotiated 4 MiB each way; 1 KiB is left for the headers around the data.
    CHECK(a.maxread == (4u << 20) - 4096);
    CHECK(a.maxwrite == (4u << 20) - 4096);
    CHECK(a.suppattr_exclcreat ==
          bitmap4::of({FATTR4_SIZE, FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP}));
    CHECK(a.space_total >= a.space_free);
    CHECK(a.files_total >= a.files_free);
  }
}

TEST_CASE("GETATTR returns only what was asked, omitting what the server does not support") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "abc");
  // mimetype (32) is supported by neither server.
  auto r = w.run({LOOKUP4args{"f"}, GETATTR4args{bitmap4::of({FATTR4_SIZE, FATTR4_MIMETYPE})}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const fattr4& f = w.res<GETATTR4res>(r, 1).resok4.obj_attributes;
  CHECK(f.attrmask.bits() == std::vector<unsigned>{FATTR4_SIZE});
  CHECK(decode_attributes(f).size == 3u);

  auto e = w.run({GETATTR4args{bitmap4{}}});
  REQUIRE(e.status == nfsstat4::NFS4_OK);
  CHECK(w.res<GETATTR4res>(e, 0).resok4.obj_attributes.attrmask.none());
  CHECK(w.res<GETATTR4res>(e, 0).resok4.obj_attributes.attr_vals.empty());
}

// vnfsd answers a GETATTR after PUTFH from what PUTFH read of the inode, as long as no
// operation between may have changed it: the attributes are the inode's at the GETATTR.
TEST_CASE("GETATTR after PUTFH, and after a WRITE and a SETATTR that follow it") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "hello", 0640);
  const nfs_fh4 fh = w.fh("f");
  const bitmap4 req = bitmap4::of({FATTR4_SIZE, FATTR4_MODE, FATTR4_CHANGE, FATTR4_TIME_METADATA});
  attributes m;
  m.mode = 0600;
  const auto more = vnfs::test::to_byte_vector(" world");
  auto r = w.session().compound({PUTFH4args{fh}, GETATTR4args{req}, GETFH4args{}, GETATTR4args{req},
                                 WRITE4args{stateid4::anonymous(), 5, stable_how4::UNSTABLE4, more},
                                 GETATTR4args{req}, setattr(m), GETATTR4args{req}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const attributes a0 = decode_attributes(result_at<GETATTR4res>(r, 2).resok4.obj_attributes);
  const attributes a1 = decode_attributes(result_at<GETATTR4res>(r, 4).resok4.obj_attributes);
  const attributes a2 = decode_attributes(result_at<GETATTR4res>(r, 6).resok4.obj_attributes);
  const attributes a3 = decode_attributes(result_at<GETATTR4res>(r, 8).resok4.obj_attributes);
  CHECK(a0.size == 5u);
  CHECK(a0.mode == 0640u);
  CHECK(a1.size == 5u);
  CHECK(a1.change == a0.change);
  CHECK(a2.size == 11u);
  CHECK(a2.mode == 0640u);
  CHECK(a2.change != a0.change);
  CHECK(a3.size == 11u);
  CHECK(a3.mode == 0600u);
  CHECK(a3.change != a2.change);
  const struct stat st = lstat_of(w / "f");
  CHECK(a3.time_metadata == ctime_of(st));
}

TEST_CASE("GETATTR of a write-only attribute is NFS4ERR_INVAL (RFC 8881 §18.7.3)") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  auto r = w.run({GETATTR4args{bitmap4::of({FATTR4_SIZE, FATTR4_TIME_MODIFY_SET})}});
  CHECK(r.status == nfsstat4::NFS4ERR_INVAL);
}

TEST_CASE("GETATTR of other object types") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.make_dir("d", 0751);
  w.make_symlink("/etc/passwd", "l");
  REQUIRE(::mkfifo((w / "p").c_str(), 0600) == 0);
  const bitmap4 req = bitmap4::of({FATTR4_TYPE, FATTR4_MODE, FATTR4_SIZE, FATTR4_NUMLINKS});
  attributes d = w.getattr("d", req);
  CHECK(d.type == nfs_ftype4::NF4DIR);
  CHECK(d.mode == 0751u);
  CHECK(d.numlinks == 2u);
  attributes l = w.getattr("l", req);
  CHECK(l.type == nfs_ftype4::NF4LNK);
  CHECK(l.size == 11u);  // strlen("/etc/passwd")
  attributes p = w.getattr("p", req);
  CHECK(p.type == nfs_ftype4::NF4FIFO);
  CHECK(p.mode == 0600u);
}

TEST_CASE("SETATTR of several attributes at once") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "0123456789", 0644);
  attributes a;
  a.mode = 0600;
  a.size = 4;
  a.owner = "1234";
  a.owner_group = "4321";
  a.time_access_set = settime4{time_how4::SET_TO_CLIENT_TIME4, {1000000000, 250}};
  a.time_modify_set = settime4{time_how4::SET_TO_CLIENT_TIME4, {1234567890, 500000000}};
  auto r = w.run({LOOKUP4args{"f"}, setattr(a)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<SETATTR4res>(r, 1).attrsset == present_attributes(a));
  const struct stat st = lstat_of(w / "f");
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_size == 4);
  CHECK(st.st_uid == 1234u);
  CHECK(st.st_gid == 4321u);
  CHECK(st.st_atim.tv_sec == 1000000000);
  CHECK(st.st_atim.tv_nsec == 250);
  CHECK(st.st_mtim.tv_sec == 1234567890);
  CHECK(st.st_mtim.tv_nsec == 500000000);

  attributes g = w.getattr("f", bitmap4::of({FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_SIZE}));
  CHECK(g.owner == "1234");
  CHECK(g.owner_group == "4321");
  CHECK(g.size == 4u);
}

TEST_CASE("SETATTR time to the server's clock") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  timespec old[2] = {{1000, 0}, {1000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, (w / "f").c_str(), old, 0) == 0);
  attributes a;
  a.time_modify_set = settime4{time_how4::SET_TO_SERVER_TIME4, {}};
  auto r = w.run({LOOKUP4args{"f"}, setattr(a)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(lstat_of(w / "f").st_mtim.tv_sec > 1000000000);  // "now", not 1000
  CHECK(lstat_of(w / "f").st_atim.tv_sec == 1000);       // untouched
}

TEST_CASE("SETATTR errors") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "0123456789", 0644);
  w.make_dir("d");
  REQUIRE(::mkfifo((w / "p").c_str(), 0600) == 0);

  SECTION("a read-only attribute") {
    attributes a;
    a.type = nfs_ftype4::NF4DIR;
    auto r = w.run({LOOKUP4args{"f"}, setattr(a)});
    CHECK(r.status == nfsstat4::NFS4ERR_INVAL);
    CHECK(w.res<SETATTR4res>(r, 1).attrsset.none());
  }
  SECTION("size of a directory") {
    attributes a;
    a.size = 0;
    CHECK(w.run({LOOKUP4args{"d"}, setattr(a)}).status == nfsstat4::NFS4ERR_ISDIR);
  }
  SECTION("an owner that is neither a number nor a known name") {
    attributes a;
    a.owner = "no-such-user-vnfs";
    CHECK(w.run({LOOKUP4args{"f"}, setattr(a)}).status == nfsstat4::NFS4ERR_BADOWNER);
    attributes g;
    g.owner_group = "no-such-group-vnfs";
    CHECK(w.run({LOOKUP4args{"f"}, setattr(g)}).status == nfsstat4::NFS4ERR_BADOWNER);
    CHECK(lstat_of(w / "f").st_uid == 0u);
  }
  SECTION("attribute values that do not match the mask") {
    fattr4 f{bitmap4::of({FATTR4_MODE}), {}};  // mode announced, no value
    auto r = w.run({LOOKUP4args{"f"}, SETATTR4args{stateid4::anonymous(), f}});
    CHECK(r.status == nfsstat4::NFS4ERR_BADXDR);
    CHECK((lstat_of(w / "f").st_mode & 07777) == 0644);
  }
  SECTION("a stateid the server never issued") {
    attributes a;
    a.size = 1;
    stateid4 bogus{1, {}};
    for (auto& b : bogus.other) b = std::byte{0x42};
    nfsstat4 s = w.run({LOOKUP4args{"f"}, setattr(a, bogus)}).status;
    CHECK((s == nfsstat4::NFS4ERR_BAD_STATEID || s == nfsstat4::NFS4ERR_STALE_STATEID));
    CHECK(lstat_of(w / "f").st_size == 10);
  }
  if (kind == server_kind::vnfsd) {
    SECTION("an attribute vnfsd does not support") {
      attributes a;
      a.archive = true;
      CHECK(w.run({LOOKUP4args{"f"}, setattr(a)}).status == nfsstat4::NFS4ERR_ATTRNOTSUPP);
    }
    SECTION("size of a fifo") {
      attributes a;
      a.size = 0;
      CHECK(w.run({LOOKUP4args{"p"}, setattr(a)}).status == nfsstat4::NFS4ERR_INVAL);
    }
    SECTION("mode bits beyond 07777, nanoseconds beyond a second") {
      attributes a;
      a.mode = 0100644;
      CHECK(w.run({LOOKUP4args{"f"}, setattr(a)}).status == nfsstat4::NFS4ERR_INVAL);
      attributes t;
      t.time_modify_set = settime4{time_how4::SET_TO_CLIENT_TIME4, {5, 1000000000u}};
      CHECK(w.run({LOOKUP4args{"f"}, setattr(t)}).status == nfsstat4::NFS4ERR_INVAL);
    }
    SECTION("owner names resolvable on the server") {
      attributes a;
      a.owner = "root";
      a.owner_group = "root";
      CHECK(w.run({LOOKUP4args{"f"}, setattr(a)}).status == nfsstat4::NFS4_OK);
    }
    SECTION("no current filehandle") {
      attributes a;
      a.mode = 0600;
      CHECK(w.session().compound({setattr(a)}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
    }
  }
}

TEST_CASE("SETATTR of the size through an open stateid") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "0123456789");
  const clientid4 cid = w.session().client_id();
  attributes a;
  a.size = 3;
  auto r = w.run({open_existing(cid, "f", OPEN4_SHARE_ACCESS_BOTH), setattr(a, stateid4::current()),
                  CLOSE4args{0, stateid4::current()}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<SETATTR4res>(r, 1).attrsset == bitmap4::of({FATTR4_SIZE}));
  CHECK(lstat_of(w / "f").st_size == 3);

  // A read-only open does not allow changing the size (RFC 8881 §18.30.4 / §9.1.2).
  a.size = 1;
  auto ro = w.run({open_existing(cid, "f", OPEN4_SHARE_ACCESS_READ),
                   setattr(a, stateid4::current())});
  CHECK(ro.status == nfsstat4::NFS4ERR_OPENMODE);
  CHECK(lstat_of(w / "f").st_size == 3);
  const stateid4 sid = w.res<OPEN4res>(ro, 0).resok4.stateid;
  CHECK(w.run({LOOKUP4args{"f"}, CLOSE4args{0, sid}}).status == nfsstat4::NFS4_OK);
}

TEST_CASE("VERIFY and NVERIFY") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "12345", 0640);
  attributes same;
  same.size = 5;
  same.mode = 0640;
  same.type = nfs_ftype4::NF4REG;
  attributes differ = same;
  differ.size = 6;

  auto v = w.run({LOOKUP4args{"f"}, VERIFY4args{attrs_of(same)}, GETFH4args{}});
  CHECK(v.status == nfsstat4::NFS4_OK);
  auto nv = w.run({LOOKUP4args{"f"}, NVERIFY4args{attrs_of(same)}, GETFH4args{}});
  CHECK(nv.status == nfsstat4::NFS4ERR_SAME);
  CHECK(nv.resarray.size() == w.base() + 2);  // GETFH did not run
  CHECK(w.run({LOOKUP4args{"f"}, VERIFY4args{attrs_of(differ)}}).status ==
        nfsstat4::NFS4ERR_NOT_SAME);
  CHECK(w.run({LOOKUP4args{"f"}, NVERIFY4args{attrs_of(differ)}}).status == nfsstat4::NFS4_OK);

  // rdattr_error cannot be verified (§18.31.3).
  attributes rd;
  rd.rdattr_error = nfsstat4::NFS4_OK;
  CHECK(w.run({LOOKUP4args{"f"}, VERIFY4args{attrs_of(rd)}}).status == nfsstat4::NFS4ERR_INVAL);

  if (kind == server_kind::vnfsd) {
    attributes unsupported;
    unsupported.archive = false;
    CHECK(w.run({LOOKUP4args{"f"}, VERIFY4args{attrs_of(unsupported)}}).status ==
          nfsstat4::NFS4ERR_ATTRNOTSUPP);
    attributes wo;
    wo.time_modify_set = settime4{time_how4::SET_TO_SERVER_TIME4, {}};
    CHECK(w.run({LOOKUP4args{"f"}, VERIFY4args{attrs_of(wo)}}).status ==
          nfsstat4::NFS4ERR_INVAL);
    fattr4 bad{bitmap4::of({FATTR4_SIZE}), {std::byte{0}}};
    CHECK(w.run({LOOKUP4args{"f"}, VERIFY4args{bad}}).status == nfsstat4::NFS4ERR_BADXDR);
    // The filehandle attribute compares too.
    attributes fh;
    fh.filehandle = w.fh("f");
    CHECK(w.run({LOOKUP4args{"f"}, VERIFY4args{attrs_of(fh)}}).status == nfsstat4::NFS4_OK);
  }
}

TEST_CASE("ACCESS") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("rw", "x", 0644);
  w.write_file("secret", "x", 0600);
  w.write_file("exe", "x", 0755);
  w.make_dir("d", 0755);
  const std::uint32_t all = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND |
                            ACCESS4_DELETE | ACCESS4_EXECUTE;
  auto access_of = [&](vnfs::test::test_session& s, const std::string& name) {
    std::vector<nfs_argop4> ops = s.root_ops();
    ops.push_back(LOOKUP4args{w.name()});
    ops.push_back(LOOKUP4args{name});
    ops.push_back(ACCESS4args{all});
    auto r = s.compound(std::move(ops));
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    return std::get<ACCESS4res>(r.resarray.back()).resok4;
  };

  SECTION("as root") {
    ACCESS4resok f = access_of(w.session(), "rw");
    CHECK((f.access & f.supported) == f.access);
    CHECK((f.access & (ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND)) ==
          (ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND));
    CHECK((f.access & ACCESS4_EXECUTE) == 0);  // no x bit at all: not even root executes
    ACCESS4resok x = access_of(w.session(), "exe");
    CHECK((x.access & ACCESS4_EXECUTE) != 0);
    ACCESS4resok d = access_of(w.session(), "d");
    CHECK((d.access & (ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY)) ==
          (ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY));
    if (kind == server_kind::vnfsd) {
      CHECK(f.supported == (ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_EXECUTE));
      CHECK(f.access == (ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND));
      CHECK(d.supported ==
            (ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE));
      CHECK(d.access == d.supported);
    }
  }
  SECTION("as another user") {
    vnfs::test::session_options o;
    o.uid = 1000;
    o.gid = 1000;
    vnfs::test::test_session user(w.server(), o);
    ACCESS4resok f = access_of(user, "rw");
    CHECK((f.access & ACCESS4_READ) != 0);
    CHECK((f.access & (ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_EXECUTE)) == 0);
    ACCESS4resok s = access_of(user, "secret");
    CHECK((s.access & (ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND)) == 0);
    ACCESS4resok d = access_of(user, "d");
    CHECK((d.access & (ACCESS4_READ | ACCESS4_LOOKUP)) == (ACCESS4_READ | ACCESS4_LOOKUP));
    CHECK((d.access & (ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE)) == 0);
    if (kind == server_kind::vnfsd) {
      CHECK(f.access == ACCESS4_READ);
      CHECK(s.access == 0u);
      CHECK(s.supported == (ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_EXECUTE));
      CHECK(d.access == (ACCESS4_READ | ACCESS4_LOOKUP));
    }
  }
}
