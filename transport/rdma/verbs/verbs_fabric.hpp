// vnfs RDMA transport, verbs provider: RDMA NICs through libibverbs and librdmacm.
//
// RC queue pairs set up by rdma_cm (private data carries RFC 8797 parameters); memory
// registered with ibv_reg_mr in one protection domain per fabric; a completion channel
// and the rdma_cm event channel are watched by the fabric's io_context, so handlers run
// there like the other providers'. Addresses are IP HOST:PORT as rdma_cm resolves them.
//
// Limits: one fabric uses the first device's protection domain; connections must go
// through that device (single-NIC hosts). Local memory that is not registered (message
// buffers, RDMA Write sources) is copied into or registered on the fly by the provider.
#pragma once

#include <memory>

#include "transport/rdma/fabric.hpp"

namespace vnfs::transport::rdma::verbs {

/// Whether ibv_get_device_list finds at least one device.
bool device_present();

/// Throws std::system_error(errc::no_such_device) when there is no device.
std::unique_ptr<fabric> make_fabric(boost::asio::io_context& io);

}  // namespace vnfs::transport::rdma::verbs
