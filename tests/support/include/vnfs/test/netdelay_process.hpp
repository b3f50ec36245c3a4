// vnfs test support: netdelay_process.hpp of the bench support library (bench/support), whose
// helpers tests name vnfs::test::*.
#pragma once

#include "vnfs/bench/netdelay_process.hpp"

namespace vnfs::test {
using bench::netdelay_process;
}  // namespace vnfs::test
