// The crash-consistency workload (test_bdb_preload), an ordinary Berkeley DB program that
// knows nothing of vnfs (the drop-in puts its environment on the server):
//
//   bdb_txn_workload run HOME ACCOUNTS   transactions moving an amount between two of
//                                        ACCOUNTS accounts (created with 1000 each), each
//                                        also incrementing the record "seq"; prints seq
//                                        after each commit returned (at most 100,000)
//   bdb_txn_workload check HOME          prints "sum S seq Q count C" of the recovered data
//
// The environment is transactional (DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK |
// DB_INIT_MPOOL), committed with the default durability (log flushed and fsync'd).
#include <db.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

void check(int ret, const char* what) {
  if (ret != 0) {
    std::fprintf(stderr, "bdb_txn_workload: %s: %s\n", what, db_strerror(ret));
    std::exit(1);
  }
}

long get_long(DB* db, DB_TXN* txn, const std::string& key, bool* found = nullptr) {
  DBT k{}, v{};
  long value = 0;
  k.data = const_cast<char*>(key.data());
  k.size = static_cast<u_int32_t>(key.size());
  v.data = &value;
  v.ulen = sizeof value;
  v.flags = DB_DBT_USERMEM;
  int ret = db->get(db, txn, &k, &v, DB_RMW);
  if (found) *found = ret == 0;
  if (ret == DB_NOTFOUND && found) return 0;
  check(ret, "get");
  return value;
}

void put_long(DB* db, DB_TXN* txn, const std::string& key, long value) {
  DBT k{}, v{};
  k.data = const_cast<char*>(key.data());
  k.size = static_cast<u_int32_t>(key.size());
  v.data = &value;
  v.size = sizeof value;
  check(db->put(db, txn, &k, &v, 0), "put");
}

std::string account(long i) { return "account" + std::to_string(i); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "run") == 0 && argc < 4)) {
    std::fprintf(stderr, "usage: bdb_txn_workload run HOME ACCOUNTS | check HOME\n");
    return 2;
  }
  bool run = std::strcmp(argv[1], "run") == 0;
  DB_ENV* env = nullptr;
  check(db_env_create(&env, 0), "db_env_create");
  env->set_errfile(env, stderr);
  env->set_errpfx(env, "bdb_txn_workload");
  check(env->set_cachesize(env, 0, 1 << 20, 1), "set_cachesize");
  check(env->open(env, argv[2], DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL, 0),
        "env open");
  DB* db = nullptr;
  check(db_create(&db, env, 0), "db_create");
  check(db->open(db, nullptr, "accounts.db", nullptr, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT, 0644), "db open");

  if (run) {
    long accounts = std::atol(argv[3]);
    DB_TXN* txn = nullptr;
    check(env->txn_begin(env, nullptr, &txn, 0), "txn_begin");
    bool found = false;
    get_long(db, txn, "seq", &found);
    if (!found) {
      for (long i = 0; i < accounts; ++i) put_long(db, txn, account(i), 1000);
      put_long(db, txn, "seq", 0);
    }
    check(txn->commit(txn, 0), "commit");
    std::printf("ready\n");
    std::fflush(stdout);
    std::mt19937_64 rng(std::random_device{}());
    for (int n = 0; n < 100000; ++n) {
      long a = static_cast<long>(rng() % static_cast<unsigned long>(accounts));
      long b = static_cast<long>(rng() % static_cast<unsigned long>(accounts));
      long amount = static_cast<long>(rng() % 100);
      check(env->txn_begin(env, nullptr, &txn, 0), "txn_begin");
      long seq = get_long(db, txn, "seq") + 1;
      put_long(db, txn, account(a), get_long(db, txn, account(a)) - amount);
      put_long(db, txn, account(b), get_long(db, txn, account(b)) + amount);
      put_long(db, txn, "seq", seq);
      check(txn->commit(txn, 0), "commit");
      std::printf("%ld\n", seq);
      std::fflush(stdout);
    }
  } else {
    DBC* cur = nullptr;
    check(db->cursor(db, nullptr, &cur, 0), "cursor");
    DBT k{}, v{};
    long sum = 0, seq = -1, count = 0;
    int ret;
    while ((ret = cur->get(cur, &k, &v, DB_NEXT)) == 0) {
      long value;
      std::memcpy(&value, v.data, sizeof value);
      std::string key(static_cast<char*>(k.data), k.size);
      if (key == "seq") {
        seq = value;
      } else {
        sum += value;
        ++count;
      }
    }
    if (ret != DB_NOTFOUND) check(ret, "cursor get");
    cur->close(cur);
    std::printf("sum %ld seq %ld count %ld\n", sum, seq, count);
  }
  check(db->close(db, 0), "db close");
  check(env->close(env, 0), "env close");
  return 0;
}
