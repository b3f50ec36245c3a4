// vnfs public API: an endpoint written "HOST:PORT", as a server's listening address or a
// peer's address is given on a command line or printed in a ready line.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vnfs {

struct host_port {
  std::string host;        ///< a name or an address; an IPv6 address without its brackets
  std::uint16_t port = 0;  ///< 0: a listener lets the system choose
};

/// Parses "HOST:PORT" or "[V6ADDR]:PORT" (the last colon separates the port), PORT a decimal
/// number 0..65535. std::nullopt if malformed: no colon, an empty host or port, a port that
/// is not a number or out of range.
inline std::optional<host_port> parse_host_port(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string_view digits = text.substr(colon + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (host.empty() || digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || value > 65535)
    return std::nullopt;
  return host_port{std::string(host), static_cast<std::uint16_t>(value)};
}

}  // namespace vnfs
