// vnfs public API: an open file.
#pragma once

#include <memory>
#include <string>

namespace vnfs {

namespace detail {
struct open_file;
struct internals;
}

/// An open file of a client (client::open). Copies refer to the same open file; it stays
/// open until client::close (or the client closes). Cheap to copy; thread-safe to share.
class file {
 public:
  file() = default;
  explicit operator bool() const { return static_cast<bool>(state_); }
  /// The path it was opened by, relative to the client's root.
  const std::string& path() const;

 private:
  friend struct detail::internals;  // the library's access (src/client/internals.hpp)
  explicit file(std::shared_ptr<detail::open_file> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::open_file> state_;
};

}  // namespace vnfs
