// vnfs fuzzing: driving an io_context, for the harnesses that run real channels and
// endpoints on loopback in the fuzzer's thread.
#pragma once

#include <chrono>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio/io_context.hpp>

#include "fuzz_input.hpp"

namespace vnfs::fuzz {

/// Runs `io`'s handlers until `done()`. Code under test that stops making progress (five
/// seconds without a handler to run) or loops is a property violation: a hang. `io` must
/// have outstanding work (an executor_work_guard), so waiting never ends it.
template <class Done>
void run_until(boost::asio::io_context& io, Done done) {
  for (int i = 0; !done(); ++i) {
    require(i < 100000, "the code under test loops");
    require(io.run_one_for(std::chrono::seconds(5)) > 0, "the code under test hangs");
  }
}

}  // namespace vnfs::fuzz
