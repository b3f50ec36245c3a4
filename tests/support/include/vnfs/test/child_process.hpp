// vnfs test support: child_process.hpp of the bench support library (bench/support), whose
// helpers tests name vnfs::test::*.
#pragma once

#include "vnfs/bench/child_process.hpp"

namespace vnfs::test {
using bench::process_error;
using bench::exit_status;
using bench::spawn_options;
using bench::child_process;
}  // namespace vnfs::test
