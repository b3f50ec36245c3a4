// Test helpers: a fabric on its own I/O thread, and synchronous wrappers for its
// asynchronous calls (bounded waits: a test never hangs on a lost completion).
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>

#include "transport/rdma/fabric.hpp"

namespace vnfs::test {

namespace rdma = vnfs::transport::rdma;

inline constexpr auto wait_limit = std::chrono::seconds(20);

template <class T>
T wait_for(std::future<T>& f) {
  REQUIRE(f.wait_for(wait_limit) == std::future_status::ready);
  return f.get();
}

/// An io_context run by one thread for the lifetime of the object.
struct io_thread {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~io_thread() {
    work.reset();
    io.stop();
    thread.join();
  }
};

/// Runs `f` on the io thread and waits for it.
template <class F>
auto on_io(boost::asio::io_context& io, F f) {
  std::packaged_task<decltype(f())()> task(std::move(f));
  auto fut = task.get_future();
  boost::asio::post(io, [&task] { task(); });
  return wait_for(fut);
}

inline std::error_code sync_write(rdma::endpoint& ep, vnfs::rpc::rdma::segment s, std::vector<rdma::bytes_view> local) {
  std::promise<std::error_code> p;
  auto f = p.get_future();
  ep.rdma_write(s, std::move(local), [&p](std::error_code ec) { p.set_value(ec); });
  return wait_for(f);
}
inline std::error_code sync_read(rdma::endpoint& ep, vnfs::rpc::rdma::segment s, std::span<std::byte> local) {
  std::promise<std::error_code> p;
  auto f = p.get_future();
  ep.rdma_read(s, local, [&p](std::error_code ec) { p.set_value(ec); });
  return wait_for(f);
}
inline std::error_code sync_send(rdma::endpoint& ep, std::vector<rdma::bytes_view> g) {
  std::promise<std::error_code> p;
  auto f = p.get_future();
  ep.post_send(std::move(g), [&p](std::error_code ec) { p.set_value(ec); });
  return wait_for(f);
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
  auto b = reinterpret_cast<const std::byte*>(s.data());
  return {b, b + s.size()};
}

}  // namespace vnfs::test
