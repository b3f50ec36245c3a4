// vnfs test support: ganesha_process.hpp of the bench support library (bench/support), whose
// helpers tests name vnfs::test::*.
#pragma once

#include "vnfs/bench/ganesha_process.hpp"

namespace vnfs::test {
using bench::ganesha_process;
}  // namespace vnfs::test
