// vnfs test support: free_port.hpp of the bench support library (bench/support), whose
// helpers tests name vnfs::test::*.
#pragma once

#include "vnfs/bench/free_port.hpp"

namespace vnfs::test {
using bench::free_port;
using bench::tcp_port_open;
}  // namespace vnfs::test
