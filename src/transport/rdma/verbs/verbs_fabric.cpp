#include "transport/rdma/verbs/verbs_fabric.hpp"

#include <infiniband/verbs.h>

namespace vnfs::transport::rdma::verbs {

bool device_present() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return false;
  ibv_free_device_list(list);
  return n > 0;
}

std::unique_ptr<fabric> make_fabric(boost::asio::io_context&) {
  throw std::system_error(std::make_error_code(std::errc::no_such_device), "verbs: no RDMA device");
}

}  // namespace vnfs::transport::rdma::verbs
