// PUTFH, PUTROOTFH, PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO,
// SECINFO_NO_NAME — against vnfsd and, where RFC 8881 fixes the answer, NFS-Ganesha.
#include <sys/stat.h>

#include "ops_fixture.hpp"

using namespace vnfs::ops_test;
using vnfs::test::server_kind;

namespace {

const bitmap4 fileid_type = bitmap4::of({FATTR4_TYPE, FATTR4_FILEID});

}  // namespace

TEST_CASE("PUTROOTFH and GETFH") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  auto r = w.run_root({GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const nfs_fh4& fh = result_at<GETFH4res>(r, w.root_base()).resok4.object;
  CHECK(!fh.empty());
  CHECK(fh.size() <= NFS4_FHSIZE);
  if (kind == server_kind::vnfsd) {
    // The export root is the root of vnfsd's name space; PUTPUBFH names it too.
    auto p = w.session().compound({PUTPUBFH4args{}, GETFH4args{}, GETATTR4args{fileid_type}});
    REQUIRE(p.status == nfsstat4::NFS4_OK);
    CHECK(result_at<GETFH4res>(p, 2).resok4.object == fh);
    attributes a = decode_attributes(result_at<GETATTR4res>(p, 3).resok4.obj_attributes);
    CHECK(a.fileid == static_cast<std::uint64_t>(lstat_of(w.server().export_dir()).st_ino));
  }
}

TEST_CASE("operations that need a filehandle get NFS4ERR_NOFILEHANDLE without one") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  auto& s = w.session();
  CHECK(s.compound({GETFH4args{}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({SAVEFH4args{}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({LOOKUP4args{"x"}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({LOOKUPP4args{}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({GETATTR4args{fileid_type}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({ACCESS4args{ACCESS4_READ}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({READLINK4args{}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(s.compound({REMOVE4args{"x"}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  // RESTOREFH without a saved filehandle has an error of its own (§18.27.3).
  CHECK(s.compound({RESTOREFH4args{}}).status == nfsstat4::NFS4ERR_RESTOREFH);
}

TEST_CASE("PUTFH of a handle from GETFH reaches the same object") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "hello");
  w.make_dir("d");
  const nfs_fh4 ffh = w.fh("f");
  const nfs_fh4 dfh = w.fh("d");
  CHECK(ffh != dfh);
  CHECK(w.fh("f") == ffh);  // the same object always has the same handle here

  auto r = w.session().compound({PUTFH4args{ffh}, GETATTR4args{fileid_type}, PUTFH4args{dfh},
                                 GETATTR4args{fileid_type}, GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  attributes fa = decode_attributes(result_at<GETATTR4res>(r, 2).resok4.obj_attributes);
  attributes da = decode_attributes(result_at<GETATTR4res>(r, 4).resok4.obj_attributes);
  CHECK(fa.type == nfs_ftype4::NF4REG);
  CHECK(fa.fileid == static_cast<std::uint64_t>(lstat_of(w / "f").st_ino));
  CHECK(da.type == nfs_ftype4::NF4DIR);
  CHECK(da.fileid == static_cast<std::uint64_t>(lstat_of(w / "d").st_ino));
  CHECK(result_at<GETFH4res>(r, 5).resok4.object == dfh);
}

TEST_CASE("PUTFH of a handle whose object was removed is NFS4ERR_STALE") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("gone", "x");
  const nfs_fh4 fh = w.fh("gone");
  REQUIRE(w.run({REMOVE4args{"gone"}}).status == nfsstat4::NFS4_OK);
  auto r = w.session().compound({PUTFH4args{fh}});
  CHECK(r.status == nfsstat4::NFS4ERR_STALE);
}

TEST_CASE("PUTFH of a malformed handle is NFS4ERR_BADHANDLE") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  nfs_fh4 fh(NFS4_FHSIZE, std::byte{0x5a});
  CHECK(w.session().compound({PUTFH4args{fh}}).status == nfsstat4::NFS4ERR_BADHANDLE);
  nfs_fh4 tiny{std::byte{1}};
  CHECK(w.session().compound({PUTFH4args{tiny}}).status == nfsstat4::NFS4ERR_BADHANDLE);
}

TEST_CASE("SAVEFH and RESTOREFH") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  const nfs_fh4 dfh = w.fh();
  const nfs_fh4 ffh = w.fh("f");
  auto r = w.run({SAVEFH4args{}, LOOKUP4args{"f"}, GETFH4args{}, RESTOREFH4args{}, GETFH4args{},
                  RESTOREFH4args{}, GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<GETFH4res>(r, 2).resok4.object == ffh);
  CHECK(w.res<GETFH4res>(r, 4).resok4.object == dfh);
  CHECK(w.res<GETFH4res>(r, 6).resok4.object == dfh);  // the saved handle stays saved

  // The saved filehandle does not outlive the COMPOUND (§16.2.3.1.1).
  CHECK(w.session().compound({RESTOREFH4args{}}).status == nfsstat4::NFS4ERR_RESTOREFH);
}

TEST_CASE("SAVEFH and RESTOREFH carry the current stateid (RFC 8881 §16.2.3.1.2)") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "content");
  // OPEN sets the current stateid; PUTFH of the directory clears it; RESTOREFH brings
  // back the file and its stateid, which READ then uses as "the current stateid".
  const nfs_fh4 dfh = w.fh();
  auto r = w.run({open_existing(w.session().client_id(), "f", OPEN4_SHARE_ACCESS_READ),
                  SAVEFH4args{}, PUTFH4args{dfh}, RESTOREFH4args{},
                  READ4args{stateid4::current(), 0, 100}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const auto& open = w.res<OPEN4res>(r, 0);
  const auto& read = w.res<READ4res>(r, 4);
  CHECK(read.resok4.eof);
  CHECK(vnfs::test::to_string(read.resok4.data) == "content");
  auto c = w.session().compound(
      {PUTFH4args{w.fh("f")}, CLOSE4args{0, open.resok4.stateid}});
  CHECK(c.status == nfsstat4::NFS4_OK);
}

TEST_CASE("LOOKUP") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("file", "x");
  w.make_dir("dir");
  w.make_symlink("dir", "link");
  w.write_file("dir/inner", "y");

  SECTION("a path of components") {
    auto r = w.run({LOOKUP4args{"dir"}, LOOKUP4args{"inner"}, GETATTR4args{fileid_type}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    attributes a = decode_attributes(w.res<GETATTR4res>(r, 2).resok4.obj_attributes);
    CHECK(a.fileid == static_cast<std::uint64_t>(lstat_of(w / "dir/inner").st_ino));
  }
  SECTION("a symlink is returned, not followed") {
    auto r = w.run({LOOKUP4args{"link"}, GETATTR4args{fileid_type}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    attributes a = decode_attributes(w.res<GETATTR4res>(r, 1).resok4.obj_attributes);
    CHECK(a.type == nfs_ftype4::NF4LNK);
    CHECK(a.fileid == static_cast<std::uint64_t>(lstat_of(w / "link").st_ino));
  }
  SECTION("a missing name") {
    auto r = w.run({LOOKUP4args{"missing"}});
    CHECK(r.status == nfsstat4::NFS4ERR_NOENT);
    CHECK(r.resarray.size() == w.base() + 1);
  }
  SECTION("the current filehandle is not a directory") {
    CHECK(w.run({LOOKUP4args{"file"}, LOOKUP4args{"x"}}).status == nfsstat4::NFS4ERR_NOTDIR);
    CHECK(w.run({LOOKUP4args{"link"}, LOOKUP4args{"inner"}}).status ==
          nfsstat4::NFS4ERR_SYMLINK);
  }
  SECTION("name rules (RFC 8881 §18.13.3)") {
    CHECK(w.run({LOOKUP4args{""}}).status == nfsstat4::NFS4ERR_INVAL);
    CHECK(w.run({LOOKUP4args{"."}}).status == nfsstat4::NFS4ERR_BADNAME);
    CHECK(w.run({LOOKUP4args{".."}}).status == nfsstat4::NFS4ERR_BADNAME);
    CHECK(w.run({LOOKUP4args{std::string(256, 'n')}}).status == nfsstat4::NFS4ERR_NAMETOOLONG);
    if (kind == server_kind::vnfsd) {
      CHECK(w.run({LOOKUP4args{"dir/inner"}}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(w.run({LOOKUP4args{std::string("fi\0le", 5)}}).status == nfsstat4::NFS4ERR_BADNAME);
    }
  }
}

TEST_CASE("LOOKUPP") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.make_dir("a");
  w.make_dir("a/b");
  w.write_file("f", "x");
  const nfs_fh4 dfh = w.fh();
  const nfs_fh4 afh = w.fh("a");
  auto r = w.run({LOOKUP4args{"a"}, LOOKUP4args{"b"}, LOOKUPP4args{}, GETFH4args{},
                  LOOKUPP4args{}, GETFH4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<GETFH4res>(r, 3).resok4.object == afh);
  CHECK(w.res<GETFH4res>(r, 5).resok4.object == dfh);
  CHECK(w.run({LOOKUP4args{"f"}, LOOKUPP4args{}}).status == nfsstat4::NFS4ERR_NOTDIR);
  if (kind == server_kind::vnfsd) {
    // The export root has no parent (§18.14.3).
    CHECK(w.session().compound({PUTROOTFH4args{}, LOOKUPP4args{}}).status ==
          nfsstat4::NFS4ERR_NOENT);
  }
}

TEST_CASE("SECINFO and SECINFO_NO_NAME") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  auto has_auth_sys = [](const SECINFO4resok& l) {
    for (const secinfo4& s : l)
      if (s.flavor == AUTH_SYS) return true;
    return false;
  };

  SECTION("SECINFO of a name consumes the current filehandle (§2.6.3.1.1.8)") {
    auto r = w.run({SECINFO4args{"f"}, GETFH4args{}});
    CHECK(r.status == nfsstat4::NFS4ERR_NOFILEHANDLE);
    REQUIRE(w.status(r, 0) == nfsstat4::NFS4_OK);
    const auto& si = w.res<SECINFO4res>(r, 0);
    CHECK(has_auth_sys(si.resok4));
    if (kind == server_kind::vnfsd) {
      REQUIRE(si.resok4.size() == 2);
      CHECK(si.resok4[0].flavor == AUTH_SYS);
      CHECK(si.resok4[1].flavor == AUTH_NONE);
    }
  }
  SECTION("SECINFO of a missing name") {
    CHECK(w.run({SECINFO4args{"missing"}}).status == nfsstat4::NFS4ERR_NOENT);
  }
  SECTION("SECINFO on a file") {
    CHECK(w.run({LOOKUP4args{"f"}, SECINFO4args{"x"}}).status == nfsstat4::NFS4ERR_NOTDIR);
  }
  SECTION("SECINFO_NO_NAME of the current filehandle") {
    auto r = w.run({LOOKUP4args{"f"},
                    SECINFO_NO_NAME4args{secinfo_style4::SECINFO_STYLE4_CURRENT_FH},
                    GETFH4args{}});
    CHECK(r.status == nfsstat4::NFS4ERR_NOFILEHANDLE);
    REQUIRE(w.status(r, 1) == nfsstat4::NFS4_OK);
    CHECK(has_auth_sys(w.res<SECINFO_NO_NAME4res>(r, 1).resok4));
  }
  SECTION("SECINFO_NO_NAME of the parent") {
    auto r = w.run({SECINFO_NO_NAME4args{secinfo_style4::SECINFO_STYLE4_PARENT}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(has_auth_sys(w.res<SECINFO_NO_NAME4res>(r, 0).resok4));
    if (kind == server_kind::vnfsd) {
      CHECK(w.session()
                .compound({PUTROOTFH4args{},
                           SECINFO_NO_NAME4args{secinfo_style4::SECINFO_STYLE4_PARENT}})
                .status == nfsstat4::NFS4ERR_NOENT);
    }
  }
}

TEST_CASE("a symbolic link as the current filehandle where a directory is needed") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.make_dir("d");
  w.make_symlink("d", "l");
  // RFC 8881 §15.1.2 (NFS4ERR_SYMLINK): "The current filehandle designates a symbolic
  // link when the current operation does not allow a symbolic link as the target."
  CHECK(w.run({LOOKUP4args{"l"}, LOOKUPP4args{}}).status == nfsstat4::NFS4ERR_SYMLINK);
  CHECK(w.run({LOOKUP4args{"l"}, READDIR4args{0, {}, 4096, 4096, {}}}).status ==
        nfsstat4::NFS4ERR_SYMLINK);
  CHECK(w.run({LOOKUP4args{"l"}, REMOVE4args{"x"}}).status == nfsstat4::NFS4ERR_SYMLINK);
  CHECK(w.run({LOOKUP4args{"l"}, SECINFO4args{"x"}}).status == nfsstat4::NFS4ERR_SYMLINK);
}
