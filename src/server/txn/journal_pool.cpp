#include "server/txn/journal_pool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "server/fs/error.hpp"

namespace vnfs::server::txn {

namespace {

constexpr std::string_view suffixes[3] = {".j0", ".j1", ".data"};

using fs::last_error;

}  // namespace

std::string journal_pool::file_name(unsigned index, int which) {
  return "s" + std::to_string(index) + std::string(suffixes[which]);
}

std::optional<std::pair<unsigned, int>> journal_pool::parse(std::string_view name) {
  if (!name.starts_with('s')) return std::nullopt;
  const std::size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 1) return std::nullopt;
  unsigned index = 0;
  const auto [end, err] = std::from_chars(name.data() + 1, name.data() + dot, index);
  if (err != std::errc{} || end != name.data() + dot) return std::nullopt;
  for (int w = 0; w < 3; ++w)
    if (name == file_name(index, w)) return std::pair{index, w};  // canonical: no leading zeros
  return std::nullopt;
}

void journal_pool::adopt(std::unique_ptr<journal_slot> s) {
  std::lock_guard g(mu_);
  next_index_ = std::max(next_index_, s->index + 1);
  free_.push_back(s.get());
  slots_.push_back(std::move(s));
}

journal_slot* journal_pool::acquire(int state_fd, std::error_code& ec) {
  std::lock_guard g(mu_);
  ec.clear();
  if (!free_.empty() && slots_.size() >= min_slots) {
    journal_slot* s = free_.front();
    free_.pop_front();
    return s;
  }
  auto s = std::make_unique<journal_slot>();
  s->index = next_index_;
  fs::unique_fd* files[3] = {&s->journal[0], &s->journal[1], &s->data};
  for (int w = 0; w < 3; ++w) {
    // O_TRUNC: a name of this index left over can only be of a slot never completed.
    *files[w] = fs::unique_fd(::openat(state_fd, file_name(s->index, w).c_str(),
                                       O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!*files[w]) {
      ec = last_error();
      return nullptr;
    }
  }
  // The names are durable before any journal in them is relied upon (once per slot).
  if (::fsync(state_fd) != 0) {
    ec = last_error();
    return nullptr;
  }
  ++next_index_;
  slots_.push_back(std::move(s));
  return slots_.back().get();
}

void journal_pool::release(journal_slot* s) {
  std::lock_guard g(mu_);
  free_.push_back(s);
}

}  // namespace vnfs::server::txn
