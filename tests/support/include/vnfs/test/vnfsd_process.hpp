// vnfs test support: vnfsd_process.hpp of the bench support library (bench/support), whose
// helpers tests name vnfs::test::*.
#pragma once

#include "vnfs/bench/vnfsd_process.hpp"

namespace vnfs::test {
using bench::vnfsd_process;
}  // namespace vnfs::test
