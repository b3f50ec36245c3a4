// vnfs public API: the four forms of a client call, produced from one description of it.
//
// client.hpp describes each call once, with one of the macros below, under the call's doc
// comment. A description names the call, its parameters (as declared, then as passed on) and
// what it yields; the macro declares the call's four forms:
//
//   callback  void NAME(PARAMS, [T* out,] detail::done_fn done);
//             the building block, defined by the library (src/client); `done(status, bytes)`
//             runs once, on a client thread.
//   group     void NAME(PARAMS, [T* out,] completion_group& g, std::uint64_t tag);
//             (vectorized calls: async_NAME(PARAMS, vresult* out, g, tag)) the callback form
//             delivering into `g` (completion: tag, status, bytes).
//   token     auto async_NAME(PARAMS, Token&& token);
//             the callback form through an Asio completion token; the handler runs where
//             client.hpp's threading model says.
//   sync      R NAME(PARAMS);   (byte calls: SYNC_NAME)
//             a wait on the callback form. The scalar calls throw
//             std::system_error(status, "vnfs: NAME WHAT") on failure; the vectorized ones
//             return the vresult and do not throw for item failures.
//
//   VNFS_STATUS_CALL(NAME, (PARAMS), (ARGS), WHAT)             token: void(std::error_code);
//                                                              sync returns nothing
//   VNFS_VALUE_CALL(NAME, T, (PARAMS), (ARGS), WHAT)           token: void(std::error_code, T);
//                                                              sync returns T
//   VNFS_BYTES_CALL(NAME, SYNC_NAME, (PARAMS), (ARGS), WHAT)   token: void(std::error_code,
//                                                              std::size_t); sync returns the
//                                                              byte count
//   VNFS_VECTOR_CALL(NAME, (PARAMS), (ARGS))                   token: void(std::error_code,
//                                                              vresult); sync returns vresult
//
// ARGS are the parameters' names: the forms pass them on, and the token form captures them
// by value. WHAT is the expression (of the parameters) that a synchronous failure's message
// names, e.g. the path. Only the callback form has a definition of its own in the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>  // before Asio (Boost 1.74's awaitable.hpp needs std::exchange)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "vnfs/completion_group.hpp"

namespace vnfs::detail {

/// Completion of an operation in the callback form: status and bytes moved. Called exactly
/// once, on a client thread.
using done_fn = std::function<void(std::error_code, std::size_t)>;

/// Delivers a completion to a group: counts it outstanding at once.
done_fn to_group(completion_group& g, std::uint64_t tag);

/// Runs `start(done)` and blocks the calling thread until `done` has run; returns what it
/// was called with. Must not be called from a client thread (the synchronous forms).
std::pair<std::error_code, std::size_t> wait(const std::function<void(done_fn)>& start);
/// wait(), throwing std::system_error(status, "vnfs: <op> <what>") on failure; returns the
/// byte count.
std::size_t wait_or_throw(const char* op, const std::string& what, const std::function<void(done_fn)>& start);

/// What associated_executor names for a handler that has no executor of its own.
struct no_associated_executor {};

/// Runs `start(done)` with a done_fn that posts `complete(handler, status, bytes)` to `ex`,
/// with work outstanding on `ex` until then (as Asio's own operations keep it: an
/// io_context's run() waits for the completion instead of returning for lack of work).
/// The work guard travels with the posted completion and is released where it runs: once
/// the completion is posted, the completing thread touches `ex` no more, so the application
/// may destroy its io_context as soon as the handler has run.
template <class Executor, class Handler, class Start, class Complete>
void start_posting(const Executor& ex, std::shared_ptr<Handler> h, Start& start, const Complete& complete) {
  auto work = std::make_shared<decltype(boost::asio::make_work_guard(ex))>(boost::asio::make_work_guard(ex));
  start([h, ex, work, complete](std::error_code ec, std::size_t n) {
    boost::asio::post(ex, [h, ec, n, complete, held = std::move(*work)]() mutable {
      held.reset();
      complete(std::move(*h), ec, n);
    });
  });
}

/// The token form: runs `start(done)` and hands the completion to the token's handler, whose
/// signature is Signature (`complete` calls it with the status, the byte count and the
/// result holder). Where the handler runs:
///  - it has an associated executor: posted to that executor;
///  - else, `fallback` is set (client_options::executor): posted to `fallback`;
///  - else: called directly on the client thread that completes the operation.
template <class Signature, class Token, class Start, class Complete>
auto initiate(Token&& token, const boost::asio::any_io_executor& fallback, Start start, Complete complete) {
  return boost::asio::async_initiate<Token, Signature>(
      [start = std::move(start), complete, fallback](auto handler) mutable {
        using handler_type = decltype(handler);
        auto h = std::make_shared<handler_type>(std::move(handler));
        if constexpr (std::is_same_v<boost::asio::associated_executor_t<handler_type, no_associated_executor>,
                                     no_associated_executor>) {
          if (fallback)
            start_posting(fallback, h, start, complete);
          else
            start([h, complete](std::error_code ec, std::size_t n) { complete(std::move(*h), ec, n); });
        } else {
          start_posting(boost::asio::get_associated_executor(*h), h, start, complete);
        }
      },
      token);
}

/// Token forms completing with void(std::error_code, std::size_t).
template <class Token, class Start>
auto initiate_bytes(Token&& token, const boost::asio::any_io_executor& fallback, Start start) {
  return initiate<void(std::error_code, std::size_t)>(
      std::forward<Token>(token), fallback, std::move(start),
      [](auto&& handler, std::error_code ec, std::size_t n) { std::move(handler)(ec, n); });
}

/// Token forms completing with void(std::error_code).
template <class Token, class Start>
auto initiate_status(Token&& token, const boost::asio::any_io_executor& fallback, Start start) {
  return initiate<void(std::error_code)>(std::forward<Token>(token), fallback, std::move(start),
                                         [](auto&& handler, std::error_code ec, std::size_t) { std::move(handler)(ec); });
}

/// Token forms completing with void(std::error_code, T): `start(T* out, done)` fills a holder
/// that lives until the handler runs.
template <class T, class Token, class Start>
auto initiate_value(Token&& token, const boost::asio::any_io_executor& fallback, Start start) {
  auto out = std::make_shared<T>();
  return initiate<void(std::error_code, T)>(
      std::forward<Token>(token), fallback,
      [out, start = std::move(start)](done_fn d) mutable { start(out.get(), std::move(d)); },
      [out](auto&& handler, std::error_code ec, std::size_t) { std::move(handler)(ec, std::move(*out)); });
}

}  // namespace vnfs::detail

#define VNFS_UNPAREN(...) __VA_ARGS__

// The macros expand inside class client: the token forms use its member `executor_`
// (client_options::executor).

// The token form of a call that yields a T through an out-parameter.
#define VNFS_VALUE_TOKEN_FORM_(NAME, T, PARAMS, ARGS)                                                      \
  template <class Token>                                                                                    \
  auto async_##NAME(VNFS_UNPAREN PARAMS, Token&& token) {                                                   \
    return ::vnfs::detail::initiate_value<T>(std::forward<Token>(token), executor_,                         \
                                             [this, VNFS_UNPAREN ARGS](T* out, ::vnfs::detail::done_fn d) { \
                                               NAME(VNFS_UNPAREN ARGS, out, std::move(d));                  \
                                             });                                                            \
  }

// The four forms of a call without an out-parameter: INITIATE makes its token form
// (initiate_status or initiate_bytes), RESULT is what its synchronous form returns (void or
// the byte count).
#define VNFS_PLAIN_FORMS_(NAME, SYNC_NAME, RESULT, INITIATE, PARAMS, ARGS, WHAT)                          \
  void NAME(VNFS_UNPAREN PARAMS, ::vnfs::detail::done_fn done);                                            \
  void NAME(VNFS_UNPAREN PARAMS, ::vnfs::completion_group& g, std::uint64_t tag) {                          \
    NAME(VNFS_UNPAREN ARGS, ::vnfs::detail::to_group(g, tag));                                             \
  }                                                                                                         \
  template <class Token>                                                                                    \
  auto async_##NAME(VNFS_UNPAREN PARAMS, Token&& token) {                                                   \
    return ::vnfs::detail::INITIATE(std::forward<Token>(token), executor_,                                  \
                                    [this, VNFS_UNPAREN ARGS](::vnfs::detail::done_fn d) {                 \
                                      NAME(VNFS_UNPAREN ARGS, std::move(d));                                \
                                    });                                                                     \
  }                                                                                                         \
  RESULT SYNC_NAME(VNFS_UNPAREN PARAMS) {                                                                   \
    return static_cast<RESULT>(::vnfs::detail::wait_or_throw(                                               \
        #NAME, WHAT, [&](::vnfs::detail::done_fn d) { NAME(VNFS_UNPAREN ARGS, std::move(d)); }));          \
  }

#define VNFS_STATUS_CALL(NAME, PARAMS, ARGS, WHAT) \
  VNFS_PLAIN_FORMS_(NAME, NAME, void, initiate_status, PARAMS, ARGS, WHAT)

#define VNFS_BYTES_CALL(NAME, SYNC_NAME, PARAMS, ARGS, WHAT) \
  VNFS_PLAIN_FORMS_(NAME, SYNC_NAME, std::size_t, initiate_bytes, PARAMS, ARGS, WHAT)

#define VNFS_VALUE_CALL(NAME, T, PARAMS, ARGS, WHAT)                                                        \
  void NAME(VNFS_UNPAREN PARAMS, T* out, ::vnfs::detail::done_fn done);                                    \
  void NAME(VNFS_UNPAREN PARAMS, T* out, ::vnfs::completion_group& g, std::uint64_t tag) {                  \
    NAME(VNFS_UNPAREN ARGS, out, ::vnfs::detail::to_group(g, tag));                                        \
  }                                                                                                         \
  VNFS_VALUE_TOKEN_FORM_(NAME, T, PARAMS, ARGS)                                                             \
  T NAME(VNFS_UNPAREN PARAMS) {                                                                             \
    T value{};                                                                                              \
    ::vnfs::detail::wait_or_throw(#NAME, WHAT, [&](::vnfs::detail::done_fn d) {                             \
      NAME(VNFS_UNPAREN ARGS, &value, std::move(d));                                                        \
    });                                                                                                     \
    return value;                                                                                           \
  }

#define VNFS_VECTOR_CALL(NAME, PARAMS, ARGS)                                                                \
  void NAME(VNFS_UNPAREN PARAMS, ::vnfs::vresult* out, ::vnfs::detail::done_fn done);                      \
  void async_##NAME(VNFS_UNPAREN PARAMS, ::vnfs::vresult* out, ::vnfs::completion_group& g, std::uint64_t tag) { \
    NAME(VNFS_UNPAREN ARGS, out, ::vnfs::detail::to_group(g, tag));                                        \
  }                                                                                                         \
  VNFS_VALUE_TOKEN_FORM_(NAME, ::vnfs::vresult, PARAMS, ARGS)                                               \
  ::vnfs::vresult NAME(VNFS_UNPAREN PARAMS) {                                                               \
    ::vnfs::vresult result;                                                                                 \
    ::vnfs::detail::wait([&](::vnfs::detail::done_fn d) { NAME(VNFS_UNPAREN ARGS, &result, std::move(d)); }); \
    return result;                                                                                          \
  }
