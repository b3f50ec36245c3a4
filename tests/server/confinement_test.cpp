// vnfsd never lets a client reach outside its export: not through "..", not through
// symbolic links (never followed), not with names containing '/' or NUL, not with forged
// filehandles — and after all attempts nothing beside the export has changed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_session.hpp"
#include "vnfs/nfs4/attributes.hpp"

using namespace vnfs::nfs4;
using vnfs::test::result_at;
using vnfs::test::session_options;
using vnfs::test::test_session;
using vnfs::test::vnfsd_process;
namespace fs = std::filesystem;

namespace {

/// Everything observable about a tree, without following symlinks.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  auto describe = [](const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return std::string("missing");
    std::ostringstream s;
    s << std::oct << st.st_mode << std::dec << ' ' << st.st_uid << ':' << st.st_gid << ' '
      << st.st_size << ' ' << st.st_nlink << ' ' << st.st_mtim.tv_sec << '.'
      << st.st_mtim.tv_nsec << ' ' << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec;
    if (S_ISLNK(st.st_mode)) s << " -> " << fs::read_symlink(p).string();
    if (S_ISREG(st.st_mode)) {
      std::ifstream in(p, std::ios::binary);
      s << " [" << std::string(std::istreambuf_iterator<char>(in), {}) << ']';
    }
    return s.str();
  };
  out["."] = describe(root);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it)
    out[fs::relative(it->path(), root).string()] = describe(it->path());
  return out;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void write_file(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

CREATE4args create(nfs_ftype4 type, const std::string& name, const std::string& link = {}) {
  CREATE4args c;
  c.objtype.type = type;
  c.objtype.linkdata = link;
  c.objname = name;
  return c;
}

OPEN4args open_args(clientid4 cid, const std::string& name, bool create_it) {
  OPEN4args a;
  a.share_access = OPEN4_SHARE_ACCESS_BOTH;
  a.share_deny = OPEN4_SHARE_DENY_NONE;
  a.owner = {cid, vnfs::test::to_byte_vector("confinement")};
  a.claim.claim = open_claim_type4::CLAIM_NULL;
  a.claim.file = name;
  if (create_it) {
    a.openhow.opentype = opentype4::OPEN4_CREATE;
    a.openhow.how.mode = createmode4::UNCHECKED4;
    attributes attrs;
    attrs.size = 0;  // would truncate an existing file
    attrs.mode = 0666;
    a.openhow.how.createattrs = encode_attributes(attrs);
  } else {
    a.openhow.opentype = opentype4::OPEN4_NOCREATE;
  }
  return a;
}

/// A scratch tree: base/export (served), base/outside (the sentinel), base/elsewhere.
struct layout {
  vnfs::test::temp_dir base{"vnfs-confine"};
  fs::path exp = base / "export";
  fs::path outside = base / "outside";
  fs::path elsewhere = base / "elsewhere";
  fs::path other_export = base / "other-export";

  layout() {
    ::chmod(base.path().c_str(), 0755);
    for (const fs::path& p : {exp, outside, elsewhere, other_export}) fs::create_directory(p);
    write_file(outside / "sentinel.txt", "do not touch");
    fs::create_directory(outside / "dir");
    write_file(outside / "dir/inner.txt", "inner");
    ::chmod((outside / "sentinel.txt").c_str(), 0666);

    fs::create_directory(exp / "d");
    write_file(exp / "d/file", "inside");
    write_file(exp / "f", "file");
    fs::create_directory(exp / "movable");
    fs::create_symlink("/etc", exp / "l_etc");
    fs::create_symlink("../../..", exp / "l_up");
    fs::create_symlink(outside.string(), exp / "l_out");
    fs::create_symlink((outside / "sentinel.txt").string(), exp / "l_sentinel");
    fs::create_symlink((exp / "d").string(), exp / "l_abs_in");
    fs::create_symlink("d", exp / "l_rel_in");
    fs::create_symlink("..", exp / "d/l_parent");
  }
};

}  // namespace

TEST_CASE("vnfsd confines clients to the export") {
  layout t;
  vnfsd_process server(t.exp);
  vnfsd_process other(t.other_export);
  const auto outside_before = snapshot(t.outside);
  const auto base_before = names_in(t.base.path());
  struct stat etc_before {};
  REQUIRE(::lstat("/etc/passwd", &etc_before) == 0);

  auto s = std::make_unique<test_session>(server.host(), server.port(), std::vector<std::string>{});
  s->compound({RECLAIM_COMPLETE4args{false}});
  auto run = [&](std::vector<nfs_argop4> ops) {
    ops.insert(ops.begin(), PUTROOTFH4args{});
    return s->compound(std::move(ops));
  };
  auto fh_of = [&](std::vector<nfs_argop4> path) {
    path.push_back(GETFH4args{});
    auto r = run(std::move(path));
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    return std::get<GETFH4res>(r.resarray.back()).resok4.object;
  };
  const nfs_fh4 root_fh = fh_of({});
  const nfs_fh4 file_fh = fh_of({LOOKUP4args{"f"}});

  SECTION("no way up from the root") {
    CHECK(run({LOOKUP4args{".."}}).status == nfsstat4::NFS4ERR_BADNAME);
    CHECK(run({LOOKUPP4args{}}).status == nfsstat4::NFS4ERR_NOENT);
    CHECK(run({SECINFO_NO_NAME4args{secinfo_style4::SECINFO_STYLE4_PARENT}}).status ==
          nfsstat4::NFS4ERR_NOENT);
    // LOOKUPP from a subdirectory ends at the root, not above it.
    auto r = run({LOOKUP4args{"d"}, LOOKUPP4args{}, GETFH4args{}, LOOKUPP4args{}});
    CHECK(r.status == nfsstat4::NFS4ERR_NOENT);
    CHECK(result_at<GETFH4res>(r, 4).resok4.object == root_fh);
  }

  SECTION("symbolic links are objects, never followed") {
    for (const char* l : {"l_etc", "l_up", "l_out", "l_abs_in", "l_rel_in"}) {
      INFO(l);
      auto a = run({LOOKUP4args{l}, GETATTR4args{bitmap4::of({FATTR4_TYPE, FATTR4_FILEID})}});
      REQUIRE(a.status == nfsstat4::NFS4_OK);
      attributes attrs = decode_attributes(result_at<GETATTR4res>(a, 3).resok4.obj_attributes);
      CHECK(attrs.type == nfs_ftype4::NF4LNK);
      struct stat st {};
      REQUIRE(::lstat((t.exp / l).c_str(), &st) == 0);
      CHECK(attrs.fileid == static_cast<std::uint64_t>(st.st_ino));
      // Nothing can be looked up, listed, created or removed "inside" a link.
      CHECK(run({LOOKUP4args{l}, LOOKUP4args{"passwd"}}).status == nfsstat4::NFS4ERR_SYMLINK);
      CHECK(run({LOOKUP4args{l}, LOOKUP4args{"sentinel.txt"}}).status ==
            nfsstat4::NFS4ERR_SYMLINK);
      CHECK(run({LOOKUP4args{l}, LOOKUPP4args{}}).status != nfsstat4::NFS4_OK);
      CHECK(run({LOOKUP4args{l}, READDIR4args{0, {}, 4096, 4096, {}}}).status ==
            nfsstat4::NFS4ERR_SYMLINK);
      CHECK(run({LOOKUP4args{l}, create(nfs_ftype4::NF4DIR, "evil")}).status ==
            nfsstat4::NFS4ERR_SYMLINK);
      CHECK(run({LOOKUP4args{l}, REMOVE4args{"sentinel.txt"}}).status ==
            nfsstat4::NFS4ERR_SYMLINK);
      CHECK(run({SAVEFH4args{}, LOOKUP4args{l}, RENAME4args{"f", "sentinel.txt"}}).status ==
            nfsstat4::NFS4ERR_SYMLINK);
      CHECK(run({LOOKUP4args{"f"}, SAVEFH4args{}, PUTFH4args{root_fh}, LOOKUP4args{l},
                 LINK4args{"evil"}})
                .status == nfsstat4::NFS4ERR_SYMLINK);
      const nfsstat4 o = run({LOOKUP4args{l}, open_args(s->client_id(), "sentinel.txt", false)}).status;
      CHECK((o == nfsstat4::NFS4ERR_SYMLINK || o == nfsstat4::NFS4ERR_NOTDIR));
    }
    CHECK(run({LOOKUP4args{"d"}, LOOKUP4args{"l_parent"}, LOOKUP4args{"f"}}).status ==
          nfsstat4::NFS4ERR_SYMLINK);
  }

  SECTION("READLINK returns the text, wherever it points") {
    const std::map<std::string, std::string> expected{
        {"l_etc", "/etc"},
        {"l_up", "../../.."},
        {"l_out", t.outside.string()},
        {"l_sentinel", (t.outside / "sentinel.txt").string()},
        {"l_abs_in", (t.exp / "d").string()},
        {"l_rel_in", "d"}};
    for (const auto& [name, text] : expected) {
      INFO(name);
      auto r = run({LOOKUP4args{name}, READLINK4args{}});
      REQUIRE(r.status == nfsstat4::NFS4_OK);
      CHECK(result_at<READLINK4res>(r, 3).resok4.link == text);
    }
  }

  SECTION("OPEN of a link does not reach its target") {
    for (const char* l : {"l_sentinel", "l_etc", "l_out"}) {
      INFO(l);
      CHECK(run({open_args(s->client_id(), l, false)}).status == nfsstat4::NFS4ERR_SYMLINK);
      // Creating "through" the link (UNCHECKED4 with size 0 would truncate the target).
      CHECK(run({open_args(s->client_id(), l, true)}).status != nfsstat4::NFS4_OK);
    }
    // SETATTR on the link object changes neither the target's size nor its mode.
    attributes size0;
    size0.size = 0;
    CHECK(run({LOOKUP4args{"l_sentinel"}, SETATTR4args{{}, encode_attributes(size0)}}).status ==
          nfsstat4::NFS4ERR_INVAL);
    // A mode on a symlink is ignored, as by the Linux server: SETATTR succeeds, and the
    // target's mode is unchanged (the snapshot of the outside tree checks it).
    attributes mode;
    mode.mode = 0600;
    CHECK(run({LOOKUP4args{"l_sentinel"}, SETATTR4args{{}, encode_attributes(mode)}}).status ==
          nfsstat4::NFS4_OK);
  }

  SECTION("names with '/', NUL, \".\" or \"..\" are refused everywhere") {
    const std::vector<std::string> bad{"..",
                                       ".",
                                       "../outside",
                                       "../../etc",
                                       "d/file",
                                       "/etc/passwd",
                                       std::string("f\0x", 3),
                                       std::string("..\0", 3)};
    for (const std::string& n : bad) {
      INFO("name of " << n.size() << " bytes: " << n);
      CHECK(run({LOOKUP4args{n}}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({create(nfs_ftype4::NF4DIR, n)}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({create(nfs_ftype4::NF4LNK, n, "/etc")}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({REMOVE4args{n}}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({SAVEFH4args{}, RENAME4args{"f", n}}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({SAVEFH4args{}, RENAME4args{n, "x"}}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({LOOKUP4args{"f"}, SAVEFH4args{}, PUTFH4args{root_fh}, LINK4args{n}}).status ==
            nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({SECINFO4args{n}}).status == nfsstat4::NFS4ERR_BADNAME);
      CHECK(run({open_args(s->client_id(), n, true)}).status == nfsstat4::NFS4ERR_BADNAME);
    }
  }

  SECTION("forged filehandles are NFS4ERR_BADHANDLE") {
    REQUIRE(file_fh.size() > 16);
    for (std::size_t i = 0; i < file_fh.size(); ++i) {
      INFO("byte " << i << " flipped");
      nfs_fh4 f = file_fh;
      f[i] ^= std::byte{0x01};
      CHECK(s->compound({PUTFH4args{f}}).status == nfsstat4::NFS4ERR_BADHANDLE);
    }
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{16}, file_fh.size() - 1}) {
      INFO("truncated to " << n);
      nfs_fh4 f(file_fh.begin(), file_fh.begin() + static_cast<std::ptrdiff_t>(n));
      CHECK(s->compound({PUTFH4args{f}}).status == nfsstat4::NFS4ERR_BADHANDLE);
    }
    nfs_fh4 longer = file_fh;
    longer.push_back(std::byte{0});
    CHECK(s->compound({PUTFH4args{longer}}).status == nfsstat4::NFS4ERR_BADHANDLE);
    std::mt19937 rng(1234);
    for (int k = 0; k < 8; ++k) {
      nfs_fh4 f(NFS4_FHSIZE);
      for (auto& b : f) b = static_cast<std::byte>(rng());
      CHECK(s->compound({PUTFH4args{f}}).status == nfsstat4::NFS4ERR_BADHANDLE);
    }
    // The same object seen through another export has a handle this export refuses.
    {
      fs::create_directory(t.other_export / "x");
      test_session o(other.host(), other.port(), {});
      auto r = o.compound({PUTROOTFH4args{}, GETFH4args{}, LOOKUP4args{"x"}, GETFH4args{}});
      REQUIRE(r.status == nfsstat4::NFS4_OK);
      CHECK(s->compound({PUTFH4args{result_at<GETFH4res>(r, 2).resok4.object}}).status ==
            nfsstat4::NFS4ERR_BADHANDLE);
      CHECK(s->compound({PUTFH4args{result_at<GETFH4res>(r, 4).resok4.object}}).status ==
            nfsstat4::NFS4ERR_BADHANDLE);
      // ... and the other way round.
      CHECK(o.compound({PUTFH4args{file_fh}}).status == nfsstat4::NFS4ERR_BADHANDLE);
    }
    // The genuine handle still works.
    CHECK(s->compound({PUTFH4args{file_fh}, GETFH4args{}}).status == nfsstat4::NFS4_OK);
  }

  SECTION("handles are persistent across restarts; a directory moved out is stale") {
    const nfs_fh4 movable = fh_of({LOOKUP4args{"movable"}});
    s.reset();
    server.restart();
    s = std::make_unique<test_session>(server.host(), server.port(), std::vector<std::string>{});
    auto r = s->compound({PUTFH4args{file_fh}, GETATTR4args{bitmap4::of({FATTR4_SIZE})}});
    REQUIRE(r.status == nfsstat4::NFS4_OK);
    CHECK(decode_attributes(result_at<GETATTR4res>(r, 2).resok4.obj_attributes).size == 4u);
    fs::rename(t.exp / "movable", t.elsewhere / "movable");
    CHECK(s->compound({PUTFH4args{movable}}).status == nfsstat4::NFS4ERR_STALE);
  }

  SECTION("RENAME and LINK stay inside the export") {
    // Both ends of RENAME/LINK are filehandles of the export and plain names in them.
    auto r = run({LOOKUP4args{"d"}, SAVEFH4args{}, PUTFH4args{root_fh},
                  RENAME4args{"file", "renamed"}, LOOKUP4args{"l_rel_in"}});
    CHECK(r.status == nfsstat4::NFS4_OK);
    CHECK(fs::exists(t.exp / "renamed"));
    auto l = run({LOOKUP4args{"l_out"}, SAVEFH4args{}, PUTFH4args{root_fh},
                  LINK4args{"link_to_link"}});
    CHECK(l.status == nfsstat4::NFS4_OK);  // a hard link to the symlink itself
    CHECK(fs::is_symlink(t.exp / "link_to_link"));
    CHECK(fs::read_symlink(t.exp / "link_to_link") == t.outside);
  }

  s.reset();
  // Nothing outside the export changed.
  CHECK(snapshot(t.outside) == outside_before);
  CHECK(names_in(t.base.path()) == base_before);
  struct stat etc_after {};
  REQUIRE(::lstat("/etc/passwd", &etc_after) == 0);
  CHECK(etc_after.st_mtim.tv_sec == etc_before.st_mtim.tv_sec);
  CHECK(etc_after.st_mtim.tv_nsec == etc_before.st_mtim.tv_nsec);
  CHECK(etc_after.st_size == etc_before.st_size);
  CHECK(!fs::exists("/etc/evil"));
  CHECK(!fs::exists("/evil"));
}
