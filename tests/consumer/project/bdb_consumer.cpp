// A consumer of the installed Berkeley DB adapter (vnfs::bdb, vnfs-bdb.pc): attaches a local
// prefix that does not exist to URL, stores one record in a Berkeley DB database under it,
// reads it back, then checks with a vnfs client that the database is on the server.
//
//   bdb_consumer URL     (nfs://HOST:PORT/PATH or file:///PATH)
//
// Prints OK and exits 0 on success; exits 1 on any mismatch or error.
#include <db.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include <vnfs/bdb/attach.hpp>

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: bdb_consumer URL\n";
    return 2;
  }
  const std::string prefix = "/nonexistent/vnfs-bdb-consumer";
  vnfs::bdb::attach({{prefix, argv[1]}});
  DB* db = nullptr;
  bool ok = db_create(&db, nullptr, 0) == 0 &&
            db->open(db, nullptr, (prefix + "/consumer.db").c_str(), nullptr, DB_BTREE, DB_CREATE, 0644) == 0;
  char k[] = "key", v[] = "value stored through vnfs::bdb";
  DBT key{}, val{}, got{};
  key.data = k;
  key.size = sizeof k;
  val.data = v;
  val.size = sizeof v;
  ok = ok && db->put(db, nullptr, &key, &val, 0) == 0 && db->get(db, nullptr, &key, &got, 0) == 0 &&
       got.size == sizeof v && std::memcmp(got.data, v, sizeof v) == 0;
  if (db) ok = db->close(db, 0) == 0 && ok;
  vnfs::bdb::detach();

  vnfs::client c = vnfs::client::connect(argv[1]);
  ok = ok && c.stat("consumer.db").size > 0;
  c.unlink("consumer.db");
  std::cout << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "bdb_consumer: " << e.what() << "\n";
  return 1;
}
