// vnfs public API: an open file.
#pragma once

#include <memory>
#include <string>

namespace vnfs {

namespace detail {
struct open_file;
}

/// An open file of a client (client::open). Copies refer to the same open file; it stays
/// open until client::close (or the client closes). Cheap to copy; thread-safe to share.
class file {
 public:
  file() = default;
  explicit operator bool() const { return static_cast<bool>(state_); }
  /// The path it was opened by, relative to the client's root.
  const std::string& path() const;

  /// For the library: the backend's state of this open file.
  explicit file(std::shared_ptr<detail::open_file> s) : state_(std::move(s)) {}
  const std::shared_ptr<detail::open_file>& state() const { return state_; }

 private:
  std::shared_ptr<detail::open_file> state_;
};

}  // namespace vnfs
