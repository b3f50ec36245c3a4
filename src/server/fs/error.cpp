#include "server/fs/error.hpp"

#include <string>

namespace vnfs::server::fs {
namespace {

class category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "vnfs.server.fs"; }
  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
      case errc::bad_handle: return "not a filehandle of this export";
      case errc::empty_name: return "empty name component";
      case errc::bad_name: return "invalid name component";
      case errc::bad_cookie: return "invalid directory cookie";
      case errc::wrong_type: return "operation not valid for this type of object";
    }
    return "unknown vnfs.server.fs error " + std::to_string(v);
  }
};

}  // namespace

const std::error_category& category() noexcept {
  static const category_impl c;
  return c;
}

}  // namespace vnfs::server::fs
