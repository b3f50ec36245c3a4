#include "server/txn/outcome_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "server/fs/error.hpp"

namespace vnfs::server::txn {

namespace {

constexpr const char* log_name = "outcomes";
constexpr const char* tmp_name = "outcomes.new";
constexpr std::size_t entry_size = 16;

using fs::last_error;

std::uint32_t check_of(const unsigned char* b) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < 12; ++i) h = (h ^ b[i]) * 16777619u;
  return h;
}

// The minute an entry was recorded: minutes since 2020-01-01 00:00 UTC (24 bits: until 2051).
constexpr std::int64_t minute_epoch = 1577836800;
// An outcome is kept at least this many whole minutes (nfs4::txn_outcome_kept_seconds, and
// one more for the minute's granularity).
constexpr std::uint32_t kept_minutes = (nfs4::txn_outcome_kept_seconds + 59) / 60 + 1;

std::array<unsigned char, entry_size> encode(std::uint64_t txnid, nfs4::txn_outcome4 o, std::uint32_t minute) {
  std::array<unsigned char, entry_size> e{};
  const std::uint32_t v = (minute << 8) | (static_cast<std::uint32_t>(o) & 0xff);
  for (int i = 0; i < 8; ++i) e[i] = static_cast<unsigned char>(txnid >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i) e[8 + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
  const std::uint32_t c = check_of(e.data());
  for (int i = 0; i < 4; ++i) e[12 + i] = static_cast<unsigned char>(c >> (24 - 8 * i));
  return e;
}

bool write_all(int fd, const unsigned char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

outcome_log::outcome_log(int state_fd, std::size_t keep, std::function<wall_clock::time_point()> now)
    : keep_(keep), now_(std::move(now)) {
  fd_ = fs::unique_fd(::openat(state_fd, log_name, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd_) throw std::system_error(last_error(), "txn: cannot open the outcome log");
  std::vector<unsigned char> all;
  unsigned char buf[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd_.get(), buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(last_error(), "txn: cannot read the outcome log");
    if (n == 0) break;
    all.insert(all.end(), buf, buf + n);
    at += n;
  }
  for (std::size_t at = 0; at + entry_size <= all.size(); at += entry_size) {
    const unsigned char* e = all.data() + at;
    std::uint64_t id = 0;
    std::uint32_t v = 0, c = 0;
    for (int i = 0; i < 8; ++i) id = id << 8 | e[i];
    for (int i = 0; i < 4; ++i) v = v << 8 | e[8 + i];
    for (int i = 0; i < 4; ++i) c = c << 8 | e[12 + i];
    if (c != check_of(e)) break;  // a torn last entry
    ++entries_in_file_;
    // Only commits and aborts are ever written: any other outcome in an entry that passes
    // its check is damage, which TXN_STATUS answers as unknown rather than pass it on.
    const auto o = static_cast<nfs4::txn_outcome4>(v & 0xff);
    if (o == nfs4::txn_outcome4::TXN_COMMITTED || o == nfs4::txn_outcome4::TXN_ABORTED) remember(id, o, v >> 8);
  }
  const bool torn = entries_in_file_ * entry_size != all.size();
  if ((torn || entries_in_file_ > 2 * std::max(keep_, order_.size())) && !rewrite(state_fd) && torn) {
    // No room for a new file (a full disk): at least the torn tail goes, so that appends
    // stay aligned (cutting needs no space). A log too long stays so until the next start.
    if (::ftruncate(fd_.get(), static_cast<off_t>(entries_in_file_ * entry_size)) != 0)
      throw std::system_error(last_error(), "txn: cannot cut the outcome log's torn tail");
  }
  room_ = entries_in_file_;
  grow_room();
}

bool outcome_log::rewrite(int state_fd) {
  // With what is kept (also drops a torn tail, so appends stay aligned). Until the rename,
  // a failure leaves the log as it was.
  fs::unique_fd tmp(::openat(state_fd, tmp_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!tmp) return false;
  bool written = true;
  for (std::uint64_t id : order_) {
    const kept& k = by_id_.at(id);
    auto e = encode(id, k.outcome, k.minute);
    if (!(written = write_all(tmp.get(), e.data(), e.size()))) break;
  }
  if (!written || ::fdatasync(tmp.get()) != 0) {
    ::unlinkat(state_fd, tmp_name, 0);
    return false;
  }
  if (::renameat(state_fd, tmp_name, state_fd, log_name) != 0 || ::fsync(state_fd) != 0)
    throw std::system_error(last_error(), "txn: cannot rewrite the outcome log");
  fd_ = fs::unique_fd(::openat(state_fd, log_name, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
  if (!fd_) throw std::system_error(last_error(), "txn: cannot open the outcome log");
  entries_in_file_ = order_.size();
  return true;
}

void outcome_log::grow_room() {
  // (Entries written without a place, by recovery at start-up, may have used room up.)
  const std::uint64_t from = std::max(room_, entries_in_file_);
  const auto at = static_cast<off_t>(from * entry_size), len = static_cast<off_t>(room_chunk * entry_size);
  if (::fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, at, len) == 0) room_ = from + room_chunk;
  else if (errno == EOPNOTSUPP || errno == ENOSYS) unbounded_ = true;
  // Else (ENOSPC): what room there is serves until the disk has space again.
}

outcome_log::place outcome_log::take_place() {
  std::lock_guard g(mu_);
  if (!unbounded_) {
    const std::uint64_t used = entries_in_file_ + promised_;
    if (room_ < used + room_chunk / 2) grow_room();
    if (!unbounded_ && room_ < used + 1) return place();
  }
  ++promised_;
  return place(this);
}

void outcome_log::place::release() noexcept {
  if (!log_) return;
  std::lock_guard g(log_->mu_);
  --log_->promised_;
  log_ = nullptr;
}

std::uint32_t outcome_log::minute() const {
  const std::int64_t s = std::chrono::duration_cast<std::chrono::seconds>(now_().time_since_epoch()).count();
  return s <= minute_epoch ? 0 : static_cast<std::uint32_t>(std::min<std::int64_t>((s - minute_epoch) / 60, 0xffffff));
}

void outcome_log::remember(std::uint64_t txnid, nfs4::txn_outcome4 o, std::uint32_t minute) {
  auto [it, fresh] = by_id_.insert_or_assign(txnid, kept{o, minute});
  if (fresh) order_.push_back(txnid);
  const std::uint32_t now = this->minute();
  while (order_.size() > keep_) {
    auto oldest = by_id_.find(order_.front());
    if (oldest->second.minute + kept_minutes >= now) break;  // younger than the guarantee
    by_id_.erase(oldest);
    order_.pop_front();
  }
}

std::error_code outcome_log::record(std::uint64_t txnid, nfs4::txn_outcome4 o, bool durable) {
  std::unique_lock g(mu_);
  const std::uint32_t m = minute();
  if (!durable) {
    remember(txnid, o, m);
    return {};
  }
  auto e = encode(txnid, o, m);
  if (!write_all(fd_.get(), e.data(), e.size())) return last_error();
  ++entries_in_file_;
  if (std::error_code ec = wait_durable(g, ++written_)) return ec;
  remember(txnid, o, m);
  return {};
}

std::error_code outcome_log::record_unsynced(std::uint64_t txnid, nfs4::txn_outcome4 o, std::uint64_t& number) {
  std::lock_guard g(mu_);
  const std::uint32_t m = minute();
  auto e = encode(txnid, o, m);
  if (!write_all(fd_.get(), e.data(), e.size())) return last_error();
  ++entries_in_file_;
  number = ++written_;
  remember(txnid, o, m);
  return {};
}

std::error_code outcome_log::make_durable(std::uint64_t number) {
  std::unique_lock g(mu_);
  return number == 0 ? std::error_code{} : wait_durable(g, number);
}

std::error_code outcome_log::wait_durable(std::unique_lock<std::mutex>& g, std::uint64_t mine) {
  for (;;) {
    for (const failed_sync& f : failed_)
      if (mine > f.after && mine <= f.last) return f.ec;
    if (synced_ >= mine) return {};
    if (syncing_) {
      synced_cv_.wait(g);
      continue;
    }
    // This caller syncs for everyone whose entry is written by now.
    syncing_ = true;
    const std::uint64_t after = attempted_, last = written_;
    attempted_ = last;
    g.unlock();
    const std::error_code ec = ::fdatasync(fd_.get()) == 0 ? std::error_code() : last_error();
    g.lock();
    syncing_ = false;
    ++syncs_;
    if (ec) failed_.push_back({after, last, ec});
    else synced_ = last;
    synced_cv_.notify_all();
  }
}

std::uint64_t outcome_log::syncs() const {
  std::lock_guard g(mu_);
  return syncs_;
}

nfs4::txn_outcome4 outcome_log::find(std::uint64_t txnid) const {
  std::lock_guard g(mu_);
  auto it = by_id_.find(txnid);
  return it == by_id_.end() ? nfs4::txn_outcome4::TXN_UNKNOWN : it->second.outcome;
}

}  // namespace vnfs::server::txn
