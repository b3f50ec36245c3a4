// vnfs client: the category of the library's own error conditions (vnfs::errc).
#include "vnfs/error.hpp"

#include <string>

namespace vnfs {
namespace {

class vnfs_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "vnfs"; }

  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
      case errc::closed: return "client closed";
      case errc::registration_limit: return "registered memory limit exceeded";
      case errc::bad_url: return "bad URL";
      case errc::unsupported_url: return "unsupported URL";
      case errc::bad_argument: return "bad argument";
      case errc::protocol_error: return "protocol error";
      case errc::session_lost: return "session lost";
      case errc::not_executed: return "not executed (an earlier item failed)";
      case errc::transactions_unsupported: return "the server does not support transactions";
      case errc::rolled_back: return "rolled back (a later item of the transaction failed)";
      case errc::transaction_too_large: return "transaction too large for one COMPOUND";
      case errc::transaction_aborted: return "the transaction was rolled back";
      case errc::outcome_unknown: return "the transaction's outcome is unknown (the connection died during commit)";
    }
    return "unknown vnfs error " + std::to_string(v);
  }

  // Map onto the portable conditions so callers can test `ec == std::errc::...`.
  std::error_condition default_error_condition(int v) const noexcept override {
    switch (static_cast<errc>(v)) {
      case errc::bad_argument: return std::errc::invalid_argument;
      case errc::registration_limit: return std::errc::not_enough_memory;
      case errc::bad_url: return std::errc::invalid_argument;
      case errc::unsupported_url: return std::errc::not_supported;
      case errc::transactions_unsupported: return std::errc::not_supported;
      case errc::protocol_error: return std::errc::protocol_error;
      default: return {v, *this};
    }
  }
};

}  // namespace

const std::error_category& category() noexcept {
  static const vnfs_category instance;
  return instance;
}

}  // namespace vnfs
