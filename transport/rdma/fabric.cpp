#include "transport/rdma/fabric.hpp"

#include "transport/rdma/cma/cma_fabric.hpp"
#include "transport/rdma/verbs/verbs_fabric.hpp"

namespace vnfs::transport::rdma {

bool rdma_device_present() { return verbs::device_present(); }

std::string_view default_provider() { return rdma_device_present() ? "verbs" : "cma"; }

std::unique_ptr<fabric> make_fabric(std::string_view provider, boost::asio::io_context& io) {
  if (provider == "cma") return cma::make_fabric(io);
  if (provider == "verbs") return verbs::make_fabric(io);
  throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                          "rdma: unknown fabric provider '" + std::string(provider) + "' (cma, verbs)");
}

}  // namespace vnfs::transport::rdma
