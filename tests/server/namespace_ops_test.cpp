// CREATE, REMOVE, RENAME, LINK, READLINK, READDIR — against vnfsd and, where RFC 8881
// fixes the answer, NFS-Ganesha.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <map>
#include <optional>
#include <set>

#include "ops_fixture.hpp"

using namespace vnfs::ops_test;
using vnfs::test::server_kind;

namespace {

CREATE4args create(nfs_ftype4 type, const std::string& name, const attributes& a = {}) {
  CREATE4args c;
  c.objtype.type = type;
  c.objname = name;
  c.createattrs = encode_attributes(a);
  return c;
}

CREATE4args create_symlink(const std::string& name, const std::string& target) {
  CREATE4args c = create(nfs_ftype4::NF4LNK, name);
  c.objtype.linkdata = target;
  return c;
}

attributes with_mode(mode4 m) {
  attributes a;
  a.mode = m;
  return a;
}

/// dircount defaults to maxcount: NFS-Ganesha returns no entries at all for dircount 0.
READDIR4args readdir(nfs_cookie4 cookie, verifier4 verf, count4 maxcount,
                     bitmap4 req = {}, std::optional<count4> dircount = {}) {
  return READDIR4args{cookie, verf, dircount.value_or(maxcount), maxcount, std::move(req)};
}

}  // namespace

TEST_CASE("CREATE of a directory") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  auto r = w.run({create(nfs_ftype4::NF4DIR, "sub", with_mode(0750)), GETFH4args{},
                  GETATTR4args{bitmap4::of({FATTR4_TYPE, FATTR4_MODE, FATTR4_FILEID})}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const CREATE4resok& ok = w.res<CREATE4res>(r, 0).resok4;
  CHECK(ok.attrset == bitmap4::of({FATTR4_MODE}));
  CHECK(ok.cinfo.before != ok.cinfo.after);
  const struct stat st = lstat_of(w / "sub");
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 07777) == 0750);  // exactly: no umask applied
  // The current filehandle is the new directory.
  CHECK(w.res<GETFH4res>(r, 1).resok4.object == w.fh("sub"));
  attributes a = decode_attributes(w.res<GETATTR4res>(r, 2).resok4.obj_attributes);
  CHECK(a.type == nfs_ftype4::NF4DIR);
  CHECK(a.fileid == static_cast<std::uint64_t>(st.st_ino));
}

TEST_CASE("CREATE of a symbolic link stores the text verbatim") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  const std::string target = "../../../etc/../nowhere//x";
  auto r = w.run({create_symlink("l", target), READLINK4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<READLINK4res>(r, 1).resok4.link == target);
  CHECK(std::filesystem::read_symlink(w / "l").string() == target);
  CHECK(S_ISLNK(lstat_of(w / "l").st_mode));
}

TEST_CASE("CREATE of special files") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  const nfs_fh4 dir = w.fh();
  auto r = w.run({create(nfs_ftype4::NF4FIFO, "fifo", with_mode(0640)), PUTFH4args{dir},
                  create(nfs_ftype4::NF4SOCK, "sock", with_mode(0600))});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const struct stat f = lstat_of(w / "fifo");
  CHECK(S_ISFIFO(f.st_mode));
  CHECK((f.st_mode & 07777) == 0640);
  CHECK(S_ISSOCK(lstat_of(w / "sock").st_mode));

  CREATE4args blk = create(nfs_ftype4::NF4BLK, "blk", with_mode(0600));
  blk.objtype.devdata = {7, 200};
  CREATE4args chr = create(nfs_ftype4::NF4CHR, "chr", with_mode(0600));
  chr.objtype.devdata = {1, 3};
  auto d = w.run({blk, PUTFH4args{dir}, chr,
                  GETATTR4args{bitmap4::of({FATTR4_TYPE, FATTR4_RAWDEV})}});
  REQUIRE(d.status == nfsstat4::NFS4_OK);
  const struct stat b = lstat_of(w / "blk");
  CHECK(S_ISBLK(b.st_mode));
  CHECK(major(b.st_rdev) == 7u);
  CHECK(minor(b.st_rdev) == 200u);
  const struct stat c = lstat_of(w / "chr");
  CHECK(S_ISCHR(c.st_mode));
  attributes a = decode_attributes(w.res<GETATTR4res>(d, 3).resok4.obj_attributes);
  CHECK(a.type == nfs_ftype4::NF4CHR);
  CHECK(a.rawdev == specdata4{1, 3});
}

TEST_CASE("CREATE with several attributes") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  attributes a;
  a.mode = 0700;
  a.owner = "2000";
  a.owner_group = "3000";
  auto r = w.run({create(nfs_ftype4::NF4DIR, "owned", a)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<CREATE4res>(r, 0).resok4.attrset == present_attributes(a));
  const struct stat st = lstat_of(w / "owned");
  CHECK(st.st_uid == 2000u);
  CHECK(st.st_gid == 3000u);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("CREATE errors") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  CHECK(w.run({create(nfs_ftype4::NF4REG, "reg")}).status == nfsstat4::NFS4ERR_BADTYPE);
  CHECK(!exists_local(w / "reg"));
  CHECK(w.run({create(nfs_ftype4::NF4DIR, "f")}).status == nfsstat4::NFS4ERR_EXIST);
  CHECK(w.run({LOOKUP4args{"f"}, create(nfs_ftype4::NF4DIR, "x")}).status ==
        nfsstat4::NFS4ERR_NOTDIR);
  CHECK(w.run({create(nfs_ftype4::NF4DIR, "")}).status == nfsstat4::NFS4ERR_INVAL);
  CHECK(w.run({create(nfs_ftype4::NF4DIR, ".")}).status == nfsstat4::NFS4ERR_BADNAME);
  CHECK(w.run({create(nfs_ftype4::NF4DIR, "..")}).status == nfsstat4::NFS4ERR_BADNAME);
  CHECK(w.run({create(nfs_ftype4::NF4DIR, std::string(256, 'x'))}).status ==
        nfsstat4::NFS4ERR_NAMETOOLONG);
  attributes ro;
  ro.fileid = 5;
  CHECK(w.run({create(nfs_ftype4::NF4DIR, "ro", ro)}).status == nfsstat4::NFS4ERR_INVAL);
  CHECK(!exists_local(w / "ro"));
  if (kind == server_kind::vnfsd) {
    CHECK(w.run({create(nfs_ftype4::NF4DIR, "a/b")}).status == nfsstat4::NFS4ERR_BADNAME);
    attributes bad;
    bad.owner = "no-such-user-vnfs";
    CHECK(w.run({create(nfs_ftype4::NF4DIR, "bad", bad)}).status == nfsstat4::NFS4ERR_BADOWNER);
    CHECK(!exists_local(w / "bad"));
    CHECK(w.run({create(nfs_ftype4::NF4ATTRDIR, "n")}).status == nfsstat4::NFS4ERR_BADTYPE);
    // Nothing of a failed CREATE is left behind.
    CHECK(std::distance(std::filesystem::directory_iterator(w.path()),
                        std::filesystem::directory_iterator()) == 1);
  }
}

TEST_CASE("REMOVE") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  w.make_dir("empty");
  w.make_dir("full");
  w.write_file("full/inner", "y");
  w.make_symlink("/etc/passwd", "l");

  auto r = w.run({REMOVE4args{"f"}, REMOVE4args{"empty"}, REMOVE4args{"l"}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const change_info4& ci = w.res<REMOVE4res>(r, 0).resok4.cinfo;
  CHECK(ci.before != ci.after);
  CHECK(!exists_local(w / "f"));
  CHECK(!exists_local(w / "empty"));
  CHECK(!exists_local(w / "l"));
  CHECK(exists_local("/etc/passwd"));  // the link went, not its target

  CHECK(w.run({REMOVE4args{"full"}}).status == nfsstat4::NFS4ERR_NOTEMPTY);
  CHECK(exists_local(w / "full/inner"));
  CHECK(w.run({REMOVE4args{"missing"}}).status == nfsstat4::NFS4ERR_NOENT);
  CHECK(w.run({REMOVE4args{""}}).status == nfsstat4::NFS4ERR_INVAL);
  CHECK(w.run({REMOVE4args{".."}}).status == nfsstat4::NFS4ERR_BADNAME);
  CHECK(w.run({LOOKUP4args{"full"}, LOOKUP4args{"inner"}, REMOVE4args{"x"}}).status ==
        nfsstat4::NFS4ERR_NOTDIR);
}

TEST_CASE("RENAME") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("a", "A");
  w.write_file("b", "B");
  w.make_dir("d1");
  w.make_dir("d2");
  w.write_file("d1/x", "X");
  w.make_dir("full");
  w.write_file("full/y", "Y");
  w.make_dir("emptydir");
  const auto a_ino = lstat_of(w / "a").st_ino;
  const auto x_ino = lstat_of(w / "d1/x").st_ino;

  SECTION("within a directory, replacing a file") {
    auto r = w.run({SAVEFH4args{}, RENAME4args{"a", "b"}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const RENAME4resok& ok = w.res<RENAME4res>(r, 1).resok4;
    CHECK(ok.source_cinfo.before != ok.source_cinfo.after);
    CHECK(ok.target_cinfo.after == ok.source_cinfo.after);
    CHECK(!exists_local(w / "a"));
    CHECK(lstat_of(w / "b").st_ino == a_ino);
  }
  SECTION("across directories: saved = source, current = target") {
    auto r = w.run({LOOKUP4args{"d1"}, SAVEFH4args{}, LOOKUPP4args{}, LOOKUP4args{"d2"},
                    RENAME4args{"x", "moved"}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(!exists_local(w / "d1/x"));
    CHECK(lstat_of(w / "d2/moved").st_ino == x_ino);
  }
  // §18.26.3: "If the source object and the target are not compatible or if the target is
  // a directory but not empty, the server will return the error NFS4ERR_EXIST." vnfsd does;
  // NFS-Ganesha (like Linux knfsd since 2013) passes the POSIX errors through instead
  // (NOTEMPTY, ISDIR, NOTDIR), so for it only the failure is checked.
  auto incompatible = [&](nfsstat4 s) {
    if (kind == server_kind::vnfsd) CHECK(s == nfsstat4::NFS4ERR_EXIST);
    else CHECK(s != nfsstat4::NFS4_OK);
  };
  SECTION("a directory over a non-empty directory") {
    incompatible(w.run({SAVEFH4args{}, RENAME4args{"emptydir", "full"}}).status);
    CHECK(exists_local(w / "full/y"));
    CHECK(exists_local(w / "emptydir"));
  }
  SECTION("a file over a directory, a directory over a file") {
    incompatible(w.run({SAVEFH4args{}, RENAME4args{"a", "emptydir"}}).status);
    incompatible(w.run({SAVEFH4args{}, RENAME4args{"emptydir", "a"}}).status);
    CHECK(S_ISREG(lstat_of(w / "a").st_mode));
    CHECK(S_ISDIR(lstat_of(w / "emptydir").st_mode));
  }
  SECTION("a directory over an empty directory, a name over itself") {
    auto r = w.run({SAVEFH4args{}, RENAME4args{"d2", "emptydir"}, RENAME4args{"b", "b"}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(!exists_local(w / "d2"));
    CHECK(S_ISDIR(lstat_of(w / "emptydir").st_mode));
    CHECK(exists_local(w / "b"));
  }
  SECTION("errors") {
    CHECK(w.run({RENAME4args{"a", "c"}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
    CHECK(w.run({SAVEFH4args{}, RENAME4args{"missing", "c"}}).status == nfsstat4::NFS4ERR_NOENT);
    CHECK(w.run({SAVEFH4args{}, RENAME4args{"a", ""}}).status == nfsstat4::NFS4ERR_INVAL);
    CHECK(w.run({SAVEFH4args{}, RENAME4args{"a", ".."}}).status == nfsstat4::NFS4ERR_BADNAME);
    CHECK(w.run({SAVEFH4args{}, RENAME4args{"..", "c"}}).status == nfsstat4::NFS4ERR_BADNAME);
    CHECK(w.run({LOOKUP4args{"a"}, SAVEFH4args{}, PUTFH4args{w.fh()}, RENAME4args{"x", "y"}})
              .status == nfsstat4::NFS4ERR_NOTDIR);
    CHECK(exists_local(w / "a"));
  }
  SECTION("a directory into itself") {
    auto r = w.run({SAVEFH4args{}, LOOKUP4args{"d1"}, RENAME4args{"d1", "inside"}});
    CHECK(r.status == nfsstat4::NFS4ERR_INVAL);
    CHECK(exists_local(w / "d1/x"));
  }
}

TEST_CASE("LINK") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  w.make_dir("d");
  w.make_dir("sub");

  const nfs_fh4 dir = w.fh();
  auto r = w.run({LOOKUP4args{"f"}, SAVEFH4args{}, PUTFH4args{dir}, LOOKUP4args{"sub"},
                  LINK4args{"hard"}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const change_info4& ci = w.res<LINK4res>(r, 4).resok4.cinfo;
  CHECK(ci.before != ci.after);
  CHECK(lstat_of(w / "sub/hard").st_ino == lstat_of(w / "f").st_ino);
  CHECK(lstat_of(w / "f").st_nlink == 2u);

  CHECK(w.run({LOOKUP4args{"d"}, SAVEFH4args{}, LOOKUPP4args{}, LINK4args{"dirlink"}}).status ==
        nfsstat4::NFS4ERR_ISDIR);
  CHECK(w.run({LOOKUP4args{"f"}, SAVEFH4args{}, PUTFH4args{dir}, LINK4args{"d"}}).status ==
        nfsstat4::NFS4ERR_EXIST);
  CHECK(w.run({LOOKUP4args{"f"}, SAVEFH4args{}, LINK4args{"x"}}).status ==
        nfsstat4::NFS4ERR_NOTDIR);
  CHECK(w.run({LINK4args{"x"}}).status == nfsstat4::NFS4ERR_NOFILEHANDLE);
  CHECK(w.run({LOOKUP4args{"f"}, SAVEFH4args{}, PUTFH4args{dir}, LINK4args{".."}}).status ==
        nfsstat4::NFS4ERR_BADNAME);
}

TEST_CASE("READLINK") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.make_symlink("/etc/shadow", "abs");
  w.make_symlink("../../..", "up");
  w.write_file("f", "x");
  auto r = w.run({LOOKUP4args{"abs"}, READLINK4args{}});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<READLINK4res>(r, 1).resok4.link == "/etc/shadow");
  auto u = w.run({LOOKUP4args{"up"}, READLINK4args{}});
  REQUIRE(u.status == nfsstat4::NFS4_OK);
  CHECK(w.res<READLINK4res>(u, 1).resok4.link == "../../..");
  CHECK(w.run({LOOKUP4args{"f"}, READLINK4args{}}).status == nfsstat4::NFS4ERR_INVAL);
}

TEST_CASE("READDIR lists every entry once, across calls") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  std::set<std::string> expected;
  for (int i = 0; i < 120; ++i) {
    std::string name = "entry-" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 7), 'z');
    w.write_file(name, "x");
    expected.insert(name);
  }
  w.make_dir("subdir");
  expected.insert("subdir");

  const bitmap4 req = bitmap4::of({FATTR4_TYPE, FATTR4_FILEID});
  std::map<std::string, attributes> seen;
  nfs_cookie4 cookie = 0;
  verifier4 verf{};
  int calls = 0;
  bool eof = false;
  while (!eof) {
    REQUIRE(++calls < 200);
    auto r = w.run({readdir(cookie, verf, 2048, req)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const READDIR4resok& ok = w.res<READDIR4res>(r, 0).resok4;
    std::size_t size = 8 + 4 + 4;
    for (const entry4& e : ok.reply.entries) {
      CHECK(e.cookie != 0);
      CHECK(e.cookie != 1);
      CHECK(e.cookie != 2);
      CHECK(e.name != ".");
      CHECK(e.name != "..");
      CHECK(seen.count(e.name) == 0);
      seen[e.name] = decode_attributes(e.attrs);
      size += xdr_size(e);
    }
    CHECK(size <= 2048);  // maxcount bounds the whole READDIR4resok
    REQUIRE((!ok.reply.entries.empty() || ok.reply.eof));
    if (!ok.reply.entries.empty()) cookie = ok.reply.entries.back().cookie;
    verf = ok.cookieverf;
    eof = ok.reply.eof;
  }
  CHECK(calls > 3);  // 2048 bytes cannot hold 121 entries
  std::set<std::string> names;
  for (const auto& [n, a] : seen) names.insert(n);
  CHECK(names == expected);
  for (const auto& [n, a] : seen) {
    INFO(n);
    CHECK(a.fileid == static_cast<std::uint64_t>(lstat_of(w / n).st_ino));
    CHECK(a.type == (n == "subdir" ? nfs_ftype4::NF4DIR : nfs_ftype4::NF4REG));
  }
}

TEST_CASE("READDIR of an empty directory, without attributes") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.make_dir("empty");
  w.write_file("one", "x");
  auto r = w.run({LOOKUP4args{"empty"}, readdir(0, {}, 4096)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  CHECK(w.res<READDIR4res>(r, 1).resok4.reply.entries.empty());
  CHECK(w.res<READDIR4res>(r, 1).resok4.reply.eof);

  auto o = w.run({readdir(0, {}, 4096)});
  REQUIRE(o.status == nfsstat4::NFS4_OK);
  const dirlist4& l = w.res<READDIR4res>(o, 0).resok4.reply;
  REQUIRE(l.entries.size() == 2);
  CHECK(l.eof);
  std::set<std::string> names{l.entries[0].name, l.entries[1].name};
  CHECK(names == std::set<std::string>{"empty", "one"});
  CHECK(l.entries[0].attrs.attrmask.none());
  CHECK(l.entries[0].attrs.attr_vals.empty());
}

TEST_CASE("READDIR errors") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "x");
  w.write_file("g", "y");
  // Cookies 1 and 2 are reserved (§18.23.3).
  CHECK(w.run({readdir(1, {}, 4096)}).status == nfsstat4::NFS4ERR_BAD_COOKIE);
  CHECK(w.run({readdir(2, {}, 4096)}).status == nfsstat4::NFS4ERR_BAD_COOKIE);
  // Not even one entry fits.
  CHECK(w.run({readdir(0, {}, 20)}).status == nfsstat4::NFS4ERR_TOOSMALL);
  CHECK(w.run({LOOKUP4args{"f"}, readdir(0, {}, 4096)}).status == nfsstat4::NFS4ERR_NOTDIR);
  CHECK(w.run({readdir(0, {}, 4096, bitmap4::of({FATTR4_TIME_ACCESS_SET}))}).status ==
        nfsstat4::NFS4ERR_INVAL);

  if (kind == server_kind::vnfsd) {
    auto r = w.run({readdir(0, {}, 4096)});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    const READDIR4resok& ok = w.res<READDIR4res>(r, 0).resok4;
    REQUIRE(ok.reply.entries.size() == 2);
    CHECK(ok.cookieverf != verifier4{});
    const nfs_cookie4 c = ok.reply.entries[0].cookie;
    // A cookie with its directory's verifier resumes after the entry ...
    auto next = w.run({readdir(c, ok.cookieverf, 4096)});
    REQUIRE(next.status == nfsstat4::NFS4_OK);
    const dirlist4& rest = w.res<READDIR4res>(next, 0).resok4.reply;
    REQUIRE(rest.entries.size() == 1);
    CHECK(rest.entries[0].name == ok.reply.entries[1].name);
    CHECK(rest.eof);
    // ... and the verifier stays the same while the directory changes.
    REQUIRE(w.run({create(nfs_ftype4::NF4DIR, "new")}).status == nfsstat4::NFS4_OK);
    auto again = w.run({readdir(0, {}, 4096)});
    REQUIRE(again.status == nfsstat4::NFS4_OK);
    CHECK(w.res<READDIR4res>(again, 0).resok4.cookieverf == ok.cookieverf);
    // Another verifier with a nonzero cookie is NFS4ERR_NOT_SAME (§18.23.3).
    verifier4 other = ok.cookieverf;
    other[0] ^= std::byte{1};
    CHECK(w.run({readdir(c, other, 4096)}).status == nfsstat4::NFS4ERR_NOT_SAME);
    // One entry per reply when dircount allows one name only.
    auto small = w.run({readdir(0, {}, 4096, {}, 16)});
    REQUIRE(small.status == nfsstat4::NFS4_OK);
    CHECK(w.res<READDIR4res>(small, 0).resok4.reply.entries.size() == 1);
    CHECK(!w.res<READDIR4res>(small, 0).resok4.reply.eof);
  }
}

TEST_CASE("READDIR attributes of entries match GETATTR") {
  auto kind = GENERATE(server_kind::vnfsd, server_kind::ganesha);
  INFO(kind_name(kind));
  workdir w(kind);
  w.write_file("f", "12345", 0604);
  w.make_symlink("f", "l");
  const bitmap4 req = bitmap4::of({FATTR4_TYPE, FATTR4_SIZE, FATTR4_MODE, FATTR4_FILEID,
                                   FATTR4_FILEHANDLE, FATTR4_RDATTR_ERROR});
  auto r = w.run({readdir(0, {}, 8192, req)});
  REQUIRE(r.status == nfsstat4::NFS4_OK);
  const dirlist4& l = w.res<READDIR4res>(r, 0).resok4.reply;
  REQUIRE(l.entries.size() == 2);
  for (const entry4& e : l.entries) {
    INFO(e.name);
    attributes a = decode_attributes(e.attrs);
    CHECK(a.rdattr_error == nfsstat4::NFS4_OK);
    CHECK(a.filehandle == w.fh(e.name));
    CHECK(a.fileid == static_cast<std::uint64_t>(lstat_of(w / e.name).st_ino));
    if (e.name == "f") {
      CHECK(a.type == nfs_ftype4::NF4REG);
      CHECK(a.size == 5u);
      CHECK(a.mode == 0604u);
    } else {
      CHECK(a.type == nfs_ftype4::NF4LNK);
      CHECK(a.size == 1u);
    }
  }
}
