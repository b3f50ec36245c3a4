// vnfs Berkeley DB adapter, internal: the process-wide state behind the hooks — the
// mappings and their clients, the files Berkeley DB opened on them, and the memory
// registered with the clients (the environment's regions).
#pragma once
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "vnfs/adapters/posix_results.hpp"
#include "vnfs/bdb/vnfs_map.hpp"
#include "vnfs/client.hpp"

namespace vnfs::bdb::detail {

/// One mapping and its client, connected on first use.
struct target {
  mapping map;
  std::mutex mu;
  std::unique_ptr<client> c;
  std::vector<std::string> reported;  ///< failures already printed (each once)
};

/// A local path under a mapping: the client and the path on it ("/" + rest).
struct remote {
  target* t = nullptr;
  client* c = nullptr;  ///< null if the connection failed (then `error` says why)
  std::string path;
  int error = 0;
};

/// Whether attach() is in effect.
bool attached();

/// The mapping a local path (absolute, or relative to the working directory) lies under,
/// connecting its client if needed; nothing when the path is not mapped.
std::optional<remote> lookup(const char* local_path);

/// The errno for an error of a vnfs call (EIO for transport and session failures).
using adapters::to_errno;

/// Prints "vnfs bdb: WHAT LOCAL_PATH (URL): MESSAGE" on stderr, once per target and text.
void report(target& t, const std::string& what, const std::string& local_path, const std::string& message);

/// Runs a client call, returning 0 or the errno it failed with. Failures are reported
/// (once each), except ENOENT and EEXIST: Berkeley DB probes for files with them.
template <class F>
int call(const remote& r, const char* what, const char* local_path, F&& f) {
  try {
    f(*r.c);
    return 0;
  } catch (const std::system_error& e) {
    int err = to_errno(e.code());
    if (err != ENOENT && err != EEXIST) report(*r.t, what, local_path, e.what());
    return err;
  } catch (const std::exception& e) {
    report(*r.t, what, local_path, e.what());
    return EIO;
  }
}

/// Registered memory containing [p, p + n) for client c, as a slice; nothing if none does.
std::optional<memory_slice> registered_slice(client* c, const void* p, std::size_t n);

/// Memory Berkeley DB's regions live in, registered with every client (now and when they
/// connect). add_region returns false if a client refused the registration.
void add_region(void* p, std::size_t n);
void remove_region(void* p);

}  // namespace vnfs::bdb::detail
