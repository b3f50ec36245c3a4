// vnfs RDMA transport: the fabric — a provider of RDMA endpoints and memory registration.
//
// Like LevelDB's Env, everything RPC-over-RDMA needs from the hardware (or its same-host
// emulation) lives behind this small interface, so the protocol code is written and tested
// once. Providers: "verbs" (libibverbs + librdmacm, RC queue pairs) and "cma" (same host:
// Unix sockets for messages, process_vm_readv/writev for one-sided transfers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio/io_context.hpp>

#include "transport/rdma/endpoint.hpp"
#include "transport/rdma/memory.hpp"

namespace vnfs::transport::rdma {

/// A listening endpoint; destroying it stops accepting (accepted endpoints live on).
class listener {
 public:
  virtual ~listener() = default;
  /// "HOST:PORT" actually bound (the picked port when asked for port 0).
  virtual std::string address() const = 0;
  virtual std::uint16_t port() const = 0;
};

/// The memory registrations of one fabric: `made` counts every register_memory that
/// succeeded, `live` those not yet destroyed (a registration outliving its fabric counts
/// until it goes).
struct registration_counts {
  std::uint64_t made = 0;
  std::uint64_t live = 0;
};

/// One protection domain: registrations made here are what endpoints made here expose.
/// All callbacks run on the io_context given at creation.
class fabric {
 public:
  using accept_handler = std::function<void(std::shared_ptr<endpoint>)>;
  using connect_handler = std::function<void(std::error_code, std::shared_ptr<endpoint>)>;

  virtual ~fabric() = default;
  virtual std::string_view provider() const = 0;
  /// The io_context given at creation, on which every callback runs (for timers of the
  /// protocol above, e.g. the responder's idle timeout).
  virtual boost::asio::io_context& context() const = 0;

  /// Registers [data, data + size) for the given remote access. Throws std::system_error.
  virtual std::unique_ptr<memory_registration> register_memory(void* data, std::size_t size,
                                                               remote_access access) = 0;
  /// What register_memory has done so far. Thread-safe.
  virtual registration_counts registrations() const = 0;

  /// Listens on HOST:PORT (port 0: any free one). Every connection is accepted with
  /// `opts` (its private data answers the peer's) and handed to on_accept, not started.
  /// Throws std::system_error when the address cannot be bound.
  virtual std::unique_ptr<listener> listen(const std::string& host, std::uint16_t port,
                                           const endpoint_options& opts, accept_handler on_accept) = 0;

  /// Connects to HOST:PORT, sending opts.private_data; `done` gets the endpoint (not
  /// started) or the error. Bounded by the provider's own connect timeout.
  virtual void connect(const std::string& host, std::uint16_t port, const endpoint_options& opts,
                       connect_handler done) = 0;
};

/// Whether an RDMA device usable by the verbs provider exists on this machine.
bool rdma_device_present();

/// "verbs" or "cma". Throws std::system_error: errc::no_such_device for verbs without a
/// device, errc::invalid_argument for an unknown provider name.
std::unique_ptr<fabric> make_fabric(std::string_view provider, boost::asio::io_context& io);

/// "verbs" when rdma_device_present(), else "cma".
std::string_view default_provider();

}  // namespace vnfs::transport::rdma
