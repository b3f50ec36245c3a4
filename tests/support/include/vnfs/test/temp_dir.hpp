// vnfs test support: temp_dir.hpp of the bench support library (bench/support), whose
// helpers tests name vnfs::test::*.
#pragma once

#include "vnfs/bench/temp_dir.hpp"

namespace vnfs::test {
using bench::temp_dir;
}  // namespace vnfs::test
