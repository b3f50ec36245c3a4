// A libdb5.3++ program linked with vnfs::bdb (attach(), no preload), against vnfsd over TCP,
// vnfsd over RPC-over-RDMA (cma) and NFS-Ganesha: btree, hash, recno and queue databases
// with cursors, records larger than a page and page sizes of 8 KiB and 64 KiB, written,
// read back from a cold cache and checked; and the exact cost of Berkeley DB's cache: a
// page that misses costs one COMPOUND whose payload lands in the cache region directly, a
// hit costs none; and damaged databases, each of which Berkeley DB reads through vnfs and
// reports (EINVAL, DB_RUNRECOVERY). The mapped prefix never exists on local disk.
#include <catch2/catch.hpp>

#include <db_cxx.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "vnfs/bdb/attach.hpp"
#include "vnfs/test/ganesha_process.hpp"
#include "vnfs/test/temp_dir.hpp"
#include "vnfs/test/vnfsd_process.hpp"

using vnfs::test::temp_dir;
namespace fs = std::filesystem;

namespace {

enum class peer_kind { vnfsd_tcp, vnfsd_cma, ganesha };

/// A server on loopback, its export directory and the URL of its root.
struct peer {
  temp_dir dir;
  std::unique_ptr<vnfs::test::vnfsd_process> vnfsd;
  std::unique_ptr<vnfs::test::ganesha_process> ganesha;
  std::string url;
  fs::path export_dir;

  explicit peer(peer_kind k) {
    if (k == peer_kind::ganesha) {
      ganesha = std::make_unique<vnfs::test::ganesha_process>();
      url = "nfs://" + ganesha->host() + ":" + std::to_string(ganesha->port()) + ganesha->pseudo_path() + "/";
      export_dir = ganesha->export_dir();
    } else if (k == peer_kind::vnfsd_cma) {
      vnfsd = std::make_unique<vnfs::test::vnfsd_process>(dir.path(), std::vector<std::string>{"--rdma", "cma:127.0.0.1:0"});
      url = "nfs+rdma://127.0.0.1:" + std::to_string(vnfsd->rdma_port()) + "/?provider=cma";
      export_dir = dir.path();
    } else {
      vnfsd = std::make_unique<vnfs::test::vnfsd_process>(dir.path());
      url = "nfs://127.0.0.1:" + std::to_string(vnfsd->port()) + "/";
      export_dir = dir.path();
    }
  }
};

const char* name(peer_kind k) {
  switch (k) {
    case peer_kind::vnfsd_tcp: return "vnfsd over TCP";
    case peer_kind::vnfsd_cma: return "vnfsd over RPC-over-RDMA (cma)";
    case peer_kind::ganesha: return "NFS-Ganesha";
  }
  return "";
}

/// attach() for one test; detach() at its end. While attached, this process's stat() of a
/// mapped path (std::filesystem's too) is answered by vnfs: check the local disk after.
struct attached {
  attached(const std::string& prefix, const std::string& url, bool registered = true) {
    vnfs::bdb::attach({{prefix, url}}, {}, {registered});
  }
  ~attached() { vnfs::bdb::detach(); }
};

/// The value stored under record i: its number, and for every 1000th record more bytes than
/// three pages (an overflow record) where the method allows it.
std::string value_of(long i, u_int32_t pagesize, bool overflow_ok) {
  std::string v = "value-" + std::to_string(i) + "-" + std::to_string(i * 2654435761u % 1000003);
  if (overflow_ok && i % 1000 == 0) v += std::string(3 * pagesize, static_cast<char>('a' + i % 26));
  return v;
}

std::string key_of(long i) { return "key" + std::to_string(i * 7919 % 1000003) + "-" + std::to_string(i); }

struct method {
  DBTYPE type;
  const char* name;
};

/// Writes n records into a fresh database, closes everything, reopens (a cold cache) and
/// reads them all back with a cursor and by key.
void write_and_read_back(const fs::path& home, const method& m, u_int32_t pagesize, long n) {
  const std::string file = std::string(m.name) + "-" + std::to_string(pagesize) + ".db";
  const bool numbered = m.type == DB_RECNO || m.type == DB_QUEUE;
  const u_int32_t re_len = 64;  // queue records are fixed-length
  auto open_db = [&](DbEnv& env, u_int32_t flags) {
    auto db = std::make_unique<Db>(&env, 0);
    db->set_pagesize(pagesize);
    if (m.type == DB_QUEUE) db->set_re_len(re_len);
    db->open(nullptr, file.c_str(), nullptr, m.type, flags, 0644);
    return db;
  };
  auto expected = [&](long i) {
    std::string v = value_of(i, pagesize, m.type != DB_QUEUE);
    if (m.type == DB_QUEUE) v.resize(re_len, ' ');
    return v;
  };
  {
    DbEnv env(0);
    env.set_cachesize(0, 8 << 20, 1);
    env.open(home.c_str(), DB_CREATE | DB_INIT_MPOOL, 0);
    auto db = open_db(env, DB_CREATE);
    for (long i = 0; i < n; ++i) {
      std::string k = key_of(i), v = expected(i);
      db_recno_t recno = static_cast<db_recno_t>(i + 1);
      Dbt key = numbered ? Dbt(&recno, sizeof recno) : Dbt(k.data(), static_cast<u_int32_t>(k.size()));
      Dbt val(v.data(), static_cast<u_int32_t>(v.size()));
      REQUIRE(db->put(nullptr, &key, &val, 0) == 0);
    }
    db->close(0);
    env.close(0);
  }
  DbEnv env(0);
  env.set_cachesize(0, 8 << 20, 1);
  env.open(home.c_str(), DB_CREATE | DB_INIT_MPOOL, 0);
  auto db = open_db(env, 0);
  // Every record through a cursor, in the method's order.
  Dbc* cursor = nullptr;
  db->cursor(nullptr, &cursor, 0);
  Dbt key, val;
  long seen = 0, bad = 0;
  while (cursor->get(&key, &val, DB_NEXT) == 0) {
    std::string v(static_cast<char*>(val.get_data()), val.get_size());
    std::string k(static_cast<char*>(key.get_data()), key.get_size());
    long i = numbered ? static_cast<long>(*static_cast<db_recno_t*>(key.get_data())) - 1 : std::stol(k.substr(k.find('-') + 1));
    if (!numbered && k != key_of(i)) ++bad;
    if (i < 0 || i >= n || v != expected(i)) ++bad;
    ++seen;
  }
  cursor->close();
  CHECK(seen == n);
  CHECK(bad == 0);
  // And some by key, overflow records among them.
  for (long i = 0; i < n; i += n / 50 + 1) {
    std::string k = key_of(i);
    db_recno_t recno = static_cast<db_recno_t>(i + 1);
    Dbt kk = numbered ? Dbt(&recno, sizeof recno) : Dbt(k.data(), static_cast<u_int32_t>(k.size()));
    Dbt vv;
    REQUIRE(db->get(nullptr, &kk, &vv, 0) == 0);
    CHECK(std::string(static_cast<char*>(vv.get_data()), vv.get_size()) == expected(i));
  }
  db->close(0);
  env.close(0);
}

}  // namespace

TEST_CASE("libdb5.3++ databases on vnfs: every access method, cursors, overflow records, 8 and 64 KiB pages") {
  const peer_kind kind = GENERATE(peer_kind::vnfsd_tcp, peer_kind::vnfsd_cma, peer_kind::ganesha);
  INFO(name(kind));
  peer p(kind);
  temp_dir local;
  const fs::path prefix = local / "mapped";
  fs::create_directory(p.export_dir / "env");
  {
  attached a(prefix.string(), p.url);
  for (method m : {method{DB_BTREE, "btree"}, method{DB_HASH, "hash"}, method{DB_RECNO, "recno"}, method{DB_QUEUE, "queue"}}) {
    for (u_int32_t pagesize : {8192u, 65536u}) {
      INFO(m.name << " with " << pagesize << "-byte pages");
      // 100,000 records in the btree with 8 KiB pages; fewer elsewhere to stay quick.
      const long n = m.type == DB_BTREE && pagesize == 8192 ? 100000 : 5000;
      write_and_read_back(prefix / "env", m, pagesize, n);
      CHECK(fs::exists(p.export_dir / "env" / (std::string(m.name) + "-" + std::to_string(pagesize) + ".db")));
    }
  }
  }
  CHECK_FALSE(fs::exists(prefix));
}

/// Page I/O of Berkeley DB's cache, counted by the client under `prefix`.
/// With the regions registered, a miss is received straight into the cache; without, it goes
/// through a library buffer (the same one COMPOUND, the payload copied).
void check_page_io(peer& p, const fs::path& prefix, bool registered) {
  attached a(prefix.string(), p.url, registered);
  const u_int32_t pagesize = 8192;
  const fs::path home = prefix / "env";
  {
    DbEnv env(0);
    env.open(home.c_str(), DB_CREATE | DB_INIT_MPOOL, 0);
    Db db(&env, 0);
    db.set_pagesize(pagesize);
    db.open(nullptr, "pages.db", nullptr, DB_BTREE, DB_CREATE, 0644);
    for (long i = 0; i < 3000; ++i) {
      std::string k = key_of(i), v = value_of(i, pagesize, false) + std::string(100, 'x');
      Dbt key(k.data(), static_cast<u_int32_t>(k.size())), val(v.data(), static_cast<u_int32_t>(v.size()));
      REQUIRE(db.put(nullptr, &key, &val, 0) == 0);
    }
    db.close(0);
    env.close(0);
  }
  REQUIRE(fs::file_size(p.export_dir / "env" / "pages.db") >= 20 * pagesize);

  DbEnv env(0);  // new regions: a cold cache
  env.open(home.c_str(), DB_CREATE | DB_INIT_MPOOL, 0);
  DbMpoolFile* mpf = nullptr;
  REQUIRE(env.memp_fcreate(&mpf, 0) == 0);
  REQUIRE(mpf->open((home / "pages.db").c_str(), 0, 0, pagesize) == 0);
  auto now = [&] { return *vnfs::bdb::stats(prefix.string()); };
  for (db_pgno_t pgno = 1; pgno <= 10; ++pgno) {
    INFO("page " << pgno);
    vnfs::client_stats before = now();
    void* page = nullptr;
    REQUIRE(mpf->get(&pgno, nullptr, 0, &page) == 0);  // miss
    vnfs::client_stats miss = now();
    CHECK(miss.compounds - before.compounds == 1);
    CHECK(miss.payload_bytes_direct - before.payload_bytes_direct == (registered ? pagesize : 0));
    CHECK(miss.payload_bytes_copied - before.payload_bytes_copied == (registered ? 0 : pagesize));
    REQUIRE(mpf->put(page, DB_PRIORITY_UNCHANGED, 0) == 0);
    REQUIRE(mpf->get(&pgno, nullptr, 0, &page) == 0);  // hit
    vnfs::client_stats hit = now();
    CHECK(hit.compounds == miss.compounds);
    CHECK(hit.payload_bytes_direct == miss.payload_bytes_direct);
    CHECK(hit.payload_bytes_copied == miss.payload_bytes_copied);
    REQUIRE(mpf->put(page, DB_PRIORITY_UNCHANGED, 0) == 0);
  }
  // Pages written back: each one WRITE straight from the cache, then one COMMIT per file.
  {
    Db db(&env, 0);
    db.open(nullptr, "pages.db", nullptr, DB_BTREE, 0, 0);
    for (long i = 0; i < 3000; i += 100) {
      std::string k = key_of(i), v = "changed-" + std::to_string(i);
      Dbt key(k.data(), static_cast<u_int32_t>(k.size())), val(v.data(), static_cast<u_int32_t>(v.size()));
      REQUIRE(db.put(nullptr, &key, &val, 0) == 0);
    }
    DB_MPOOL_STAT* ms = nullptr;
    REQUIRE(env.memp_stat(&ms, nullptr, DB_STAT_CLEAR) == 0);
    std::free(ms);
    vnfs::client_stats before = now();
    REQUIRE(db.sync(0) == 0);
    vnfs::client_stats after = now();
    REQUIRE(env.memp_stat(&ms, nullptr, 0) == 0);
    const std::uint64_t written = ms->st_page_out;
    std::free(ms);
    REQUIRE(written >= 10);
    CHECK(after.compounds - before.compounds == written + 1);
    CHECK(after.payload_bytes_direct - before.payload_bytes_direct == written * pagesize);
    CHECK(after.payload_bytes_copied == before.payload_bytes_copied);
    db.close(0);
  }
  REQUIRE(mpf->close(0) == 0);
  env.close(0);
}

TEST_CASE("Berkeley DB's cache on vnfs: a miss is one COMPOUND straight into the cache, a hit is none") {
  const peer_kind kind = GENERATE(peer_kind::vnfsd_tcp, peer_kind::vnfsd_cma, peer_kind::ganesha);
  INFO(name(kind));
  peer p(kind);
  temp_dir local;
  const fs::path prefix = local / "mapped";
  fs::create_directory(p.export_dir / "env");
  check_page_io(p, prefix, true);
  CHECK_FALSE(fs::exists(prefix));
}

TEST_CASE("Berkeley DB's cache in unregistered memory: the same COMPOUNDs, every page read copied") {
  peer p(peer_kind::vnfsd_tcp);
  temp_dir local;
  fs::create_directory(p.export_dir / "env");
  check_page_io(p, local / "mapped", false);
}

TEST_CASE("a vnfsd restart under a running Berkeley DB program loses no committed transaction") {
  peer p(peer_kind::vnfsd_tcp);
  temp_dir local;
  const fs::path prefix = local / "mapped";
  fs::create_directory(p.export_dir / "env");
  {
    attached a(prefix.string(), p.url);
    DbEnv env(0);
    env.open((prefix / "env").c_str(), DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL, 0);
    Db db(&env, 0);
    db.open(nullptr, "restart.db", nullptr, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT, 0644);
    auto put = [&](long i) {
      std::string k = key_of(i), v = value_of(i, 8192, false);
      Dbt key(k.data(), static_cast<u_int32_t>(k.size())), val(v.data(), static_cast<u_int32_t>(v.size()));
      return db.put(nullptr, &key, &val, DB_AUTO_COMMIT);
    };
    for (long i = 0; i < 200; ++i) REQUIRE(put(i) == 0);
    p.vnfsd->restart();
    for (long i = 200; i < 400; ++i) REQUIRE(put(i) == 0);
    CHECK(vnfs::bdb::stats(prefix.string())->reconnects >= 1);
    db.close(0);
    env.close(0);
  }
  attached a(prefix.string(), p.url);
  DbEnv env(0);
  env.open((prefix / "env").c_str(), DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL | DB_RECOVER, 0);
  Db db(&env, 0);
  db.open(nullptr, "restart.db", nullptr, DB_BTREE, DB_AUTO_COMMIT, 0);
  for (long i = 0; i < 400; ++i) {
    std::string k = key_of(i);
    Dbt key(k.data(), static_cast<u_int32_t>(k.size())), val;
    REQUIRE(db.get(nullptr, &key, &val, 0) == 0);
    CHECK(std::string(static_cast<char*>(val.get_data()), val.get_size()) == value_of(i, 8192, false));
  }
  db.close(0);
  env.close(0);
}

namespace {

/// What Berkeley DB made of a database: 0 when a cursor walked every record, else the error
/// of the open or the walk (DbException's errno, or the walk's non-zero code), with where.
struct walk_result {
  int error = 0;
  std::string what = "opened and read";
  long seen = 0;  ///< records walked
};

/// Opens `file` of the environment `home` on vnfs and walks every record with a cursor.
walk_result open_and_walk(const fs::path& home, const std::string& file) {
  walk_result r;
  try {
    DbEnv env(0);
    env.set_cachesize(0, 4 << 20, 1);
    // A checksum that fails panics the environment, which then fails every call, closes
    // included, and frees nothing: the failure is still returned, the closes then work.
    env.set_flags(DB_NOPANIC, 1);
    env.open(home.c_str(), DB_CREATE | DB_INIT_MPOOL, 0);
    Db db(&env, 0);
    Dbc* cursor = nullptr;
    try {
      db.open(nullptr, file.c_str(), nullptr, DB_BTREE, 0, 0);
      db.cursor(nullptr, &cursor, 0);
      Dbt key, val;
      int rc = 0;
      while ((rc = cursor->get(&key, &val, DB_NEXT)) == 0) ++r.seen;
      if (rc != DB_NOTFOUND) r = {rc, std::string("cursor: ") + db_strerror(rc), r.seen};
    } catch (const DbException& e) {
      r = {e.get_errno(), e.what(), r.seen};
    }
    // Every handle closed, also after a failure (the first error is what counts).
    try {
      if (cursor != nullptr) cursor->close();
      db.close(0);
      env.close(0);
    } catch (const DbException& e) {
      if (r.error == 0) r = {e.get_errno(), e.what(), r.seen};
    }
  } catch (const DbException& e) {
    r = {e.get_errno(), e.what(), r.seen};
  }
  // The environment's regions go, so that the next call does not join one that this call's
  // damage has marked panicked.
  try {
    DbEnv(0).remove(home.c_str(), DB_FORCE);
  } catch (const DbException& e) {
    if (r.error == 0) r = {e.get_errno(), e.what(), r.seen};
  }
  return r;
}

}  // namespace

// Damaged databases on the server (papers/003's Berkeley DB, and the rule that bad input gets
// a clear error): garbage over the meta page, a few bytes changed in every other page (the
// database was made with DB_CHKSUM), the file cut inside its second page. Berkeley DB reads
// them through vnfs and says so; nothing crashes or hangs, the file on the server stays as
// the damage left it, and nothing appears on local disk.
TEST_CASE("damaged Berkeley DB databases on vnfs: Berkeley DB reports each; nothing else is touched") {
  peer p(peer_kind::vnfsd_tcp);
  temp_dir local;
  const fs::path prefix = local / "mapped";
  const fs::path on_server = p.export_dir / "env";
  fs::create_directory(on_server);
  constexpr u_int32_t pagesize = 8192;
  {
  attached a(prefix.string(), p.url);
  {
    DbEnv env(0);
    env.open((prefix / "env").c_str(), DB_CREATE | DB_INIT_MPOOL, 0);
    Db db(&env, 0);
    db.set_pagesize(pagesize);
    db.set_flags(DB_CHKSUM);
    db.open(nullptr, "good.db", nullptr, DB_BTREE, DB_CREATE, 0644);
    for (long i = 0; i < 3000; ++i) {
      std::string k = key_of(i), v = value_of(i, pagesize, true);
      Dbt key(k.data(), static_cast<u_int32_t>(k.size())), val(v.data(), static_cast<u_int32_t>(v.size()));
      REQUIRE(db.put(nullptr, &key, &val, 0) == 0);
    }
    db.close(0);
    env.close(0);
  }
  const auto good = fs::file_size(on_server / "good.db");
  REQUIRE(good >= 20 * pagesize);
  walk_result r = open_and_walk(prefix / "env", "good.db");
  REQUIRE(r.error == 0);
  REQUIRE(r.seen == 3000);

  // Each damage to a copy of the database, made on the server's disk.
  auto damaged = [&](const std::string& name, auto&& damage) {
    fs::copy_file(on_server / "good.db", on_server / name);
    std::fstream f(on_server / name, std::ios::in | std::ios::out | std::ios::binary);
    damage(f);
    f.close();
    return fs::path(on_server / name);
  };
  const fs::path meta = damaged("meta.db", [](std::fstream& f) {
    const std::string junk(512, '\x5a');
    f.seekp(0);
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  });
  const fs::path pages = damaged("pages.db", [&](std::fstream& f) {
    const std::string junk(64, '\xa5');
    for (std::uintmax_t at = pagesize + 100; at + junk.size() <= good; at += pagesize) {
      f.seekp(static_cast<std::streamoff>(at));
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  });
  const fs::path cut = damaged("cut.db", [](std::fstream&) {});
  fs::resize_file(cut, pagesize + pagesize / 2);

  // The open refuses a meta page that is not one, and a file that is no whole number of
  // pages (EINVAL); the walk meets the first page whose checksum fails (DB_RUNRECOVERY).
  const std::pair<fs::path, int> cases[] = {{meta, EINVAL}, {pages, DB_RUNRECOVERY}, {cut, EINVAL}};
  for (const auto& [file, expected] : cases) {
    INFO(file.filename().string());
    const std::vector<char> before = [&] {
      std::ifstream in(file, std::ios::binary);
      return std::vector<char>(std::istreambuf_iterator<char>(in), {});
    }();
    r = open_and_walk(prefix / "env", file.filename().string());
    INFO("Berkeley DB: " << r.what << " (" << r.seen << " records walked)");
    CHECK(r.error == expected);
    CHECK(r.seen < 3000);
    std::ifstream in(file, std::ios::binary);
    CHECK(std::vector<char>(std::istreambuf_iterator<char>(in), {}) == before);
  }
  // The intact database still reads whole after its damaged copies were tried.
  r = open_and_walk(prefix / "env", "good.db");
  CHECK(r.error == 0);
  CHECK(r.seen == 3000);
  }
  CHECK_FALSE(fs::exists(prefix));
}
