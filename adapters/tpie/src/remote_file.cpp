#include "remote_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "failure.hpp"
#include "vnfs/adapters/open_lost.hpp"
#include "vnfs/nfs4/status.hpp"

namespace vnfs::tpie::detail {

namespace {

constexpr std::size_t max_request = std::size_t(1) << 20;  // the client's largest READ/WRITE

std::size_t slots_for(std::size_t bytes, std::size_t request) { return (bytes + request - 1) / request; }

}  // namespace

remote_file::remote_file(std::shared_ptr<vnfs::client> c, vnfs::file f, int access_mode, std::string path,
                         engine_options options, std::optional<std::uint64_t> size, transfer_stats& stats)
    : open_file(std::move(path)),
      client_(std::move(c)),
      file_(std::move(f)),
      access_mode_(access_mode),
      options_(options),
      stats_(stats),
      size_(size) {
  request_ = std::clamp<std::size_t>(options_.request_bytes, 4096, max_request);
  window_slots_ = options_.read_ahead ? std::max<std::size_t>(1, slots_for(options_.read_ahead_bytes, request_)) : 0;
  write_limit_ = options_.write_behind ? std::max(request_, options_.write_behind_bytes) : request_;
  std::size_t n = std::max({window_slots_, slots_for(write_limit_, request_), std::size_t(2)});
  slots_.resize(n);
}

remote_file::~remote_file() {
  if (closed_) return;
  try {
    close();
  } catch (...) {
  }
}

void remote_file::ensure_buffers() {
  if (buffer_) return;
  const std::size_t bytes = slots_.size() * request_;
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) throw std::bad_alloc();
  buffer_ = {static_cast<std::byte*>(p), &std::free};
  try {
    region_ = client_->register_memory(p, bytes, vnfs::access::read_write);
  } catch (const std::system_error&) {
    // Over the client's registration cap: plain memory, the transport copies.
  }
}

std::optional<std::size_t> remote_file::free_slot() const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].state == slot_state::free) return i;
  return std::nullopt;
}

std::size_t remote_file::acquire_slot() {
  for (;;) {
    if (auto i = free_slot()) return *i;
    take_completion(true);
  }
}

void remote_file::issue_read(std::size_t i, std::uint64_t offset, std::size_t length, bool ahead) {
  slot& s = slots_[i];
  s = slot{};
  s.state = slot_state::reading;
  s.offset = offset;
  s.length = length;
  s.ahead = ahead;
  s.generation = generation_;
  ++stats_.read_requests;
  if (region_)
    client_->read(file_, offset, region_.slice(i * request_, length), group_, i);
  else
    client_->read(file_, offset, std::span<std::byte>(slot_data(i), length), group_, i);
}

void remote_file::issue_write(std::size_t i) {
  slot& s = slots_[i];
  s.state = slot_state::writing;
  s.generation = generation_;
  ++stats_.write_requests;
  const std::size_t at = i * request_ + s.done;
  const std::size_t len = s.length - s.done;
  if (region_)
    client_->write(file_, s.offset + s.done, region_.slice(at, len), group_, i);
  else
    client_->write(file_, s.offset + s.done, std::span<const std::byte>(buffer_.get() + at, len), group_, i);
}

bool remote_file::take_completion(bool block) {
  std::optional<vnfs::completion> c;
  if (block) {
    if (group_.outstanding() == 0) return false;
    ++stats_.waits;
    c = group_.wait();
  } else {
    c = group_.poll();
  }
  if (!c) return false;
  on_completion(static_cast<std::size_t>(c->tag), c->status, static_cast<std::size_t>(c->bytes));
  return true;
}

void remote_file::on_completion(std::size_t i, std::error_code ec, std::size_t bytes) {
  slot& s = slots_[i];
  if (ec && (s.state == slot_state::reading || s.state == slot_state::writing) && !s.abandoned &&
      recovered(ec, s.generation)) {
    if (s.state == slot_state::reading)
      issue_read(i, s.offset, s.length, s.ahead);
    else
      issue_write(i);
    return;
  }
  if (!ec) recoveries_in_a_row_ = 0;
  if (s.state == slot_state::reading) {
    if (s.abandoned) {
      s = slot{};
      return;
    }
    s.state = slot_state::ready;
    s.error = ec;
    s.done = ec ? 0 : bytes;
    return;
  }
  if (s.state == slot_state::writing) {
    if (!ec && bytes > 0 && s.done + bytes < s.length) {  // a short WRITE: send the rest
      s.done += bytes;
      issue_write(i);
      return;
    }
    if (!ec && bytes == 0) ec = std::make_error_code(std::errc::io_error);
    if (ec)
      note_failure(ec, "write-behind of " + std::to_string(s.length) + " bytes at offset " + std::to_string(s.offset) +
                           " to");
    write_bytes_queued_ -= s.length;
    s = slot{};
  }
}

bool remote_file::recovered(std::error_code ec, unsigned generation) {
  if (!adapters::open_lost(ec)) return false;
  if (generation != generation_) return true;  // already opened again since it was sent
  if (++recoveries_in_a_row_ > 3) return false;  // the new opens are lost as well: give up
  try {
    file_ = client_->open(file_.path(), access_mode_, 0);
  } catch (const std::system_error&) {
    return false;
  }
  ++generation_;
  return true;
}

void remote_file::note_failure(std::error_code ec, const std::string& what) {
  if (failed_) return;  // the first failure is the one reported
  failed_ = true;
  failure_code_ = ec;
  failure_what_ = what;
}

void remote_file::check() {
  while (take_completion(false)) {
  }
  if (failed_) {
    failed_ = false;
    throw_io_error(failure_code_, failure_what_, path());
  }
}

// ---- reads ---------------------------------------------------------------------------------

void remote_file::retire_window_slot(slot& s) {
  if (s.state == slot_state::reading) {  // its READ completes into a slot nobody waits for
    s.abandoned = true;
    stats_.bytes_discarded += s.length;
  } else {
    if (!s.error && s.done > s.consumed) stats_.bytes_discarded += s.done - s.consumed;
    s = slot{};
  }
}

void remote_file::drop_window() {
  for (std::size_t i : window_) retire_window_slot(slots_[i]);
  window_.clear();
}

void remote_file::fill_window() {
  const std::uint64_t end = *size_;
  while (window_.size() < window_slots_ && window_end_ < end) {
    auto i = window_.empty() ? std::optional<std::size_t>(acquire_slot()) : free_slot();
    if (!i) return;
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(request_, end - window_end_));
    issue_read(*i, window_end_, len, !window_.empty());
    window_.push_back(*i);
    window_end_ += len;
  }
}

std::size_t remote_file::read_through_window(std::uint64_t offset, std::byte* dst, std::size_t size) {
  if (!window_.empty() && (offset < slots_[window_.front()].offset || offset >= window_end_)) drop_window();
  if (window_.empty()) window_end_ = offset;
  std::size_t delivered = 0;
  // Slots the read has skipped over are used up.
  while (!window_.empty()) {
    slot& s = slots_[window_.front()];
    if (s.offset + s.length > offset) break;
    retire_window_slot(s);
    window_.pop_front();
  }
  if (window_.empty()) window_end_ = offset;
  fill_window();
  while (delivered < size && !window_.empty()) {
    const std::size_t i = window_.front();
    while (slots_[i].state == slot_state::reading) take_completion(true);
    slot& s = slots_[i];
    if (s.error) {
      const std::error_code ec = s.error;
      const std::uint64_t at = s.offset;
      drop_window();
      throw_io_error(ec, "read at offset " + std::to_string(at) + " of", path());
    }
    const std::uint64_t pos = offset + delivered;
    const std::uint64_t have_end = s.offset + s.done;
    if (pos >= have_end) break;  // the server's file ends here
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(size - delivered, have_end - pos));
    std::memcpy(dst + delivered, slot_data(i) + (pos - s.offset), n);
    if (s.ahead) stats_.bytes_read_ahead += n;
    s.consumed += n;
    delivered += n;
    if (pos + n >= have_end) {  // the slot is used up
      const bool short_read = s.done < s.length;
      s = slot{};
      window_.pop_front();
      if (short_read) {  // the file ended early: what lies beyond is not to be trusted
        drop_window();
        break;
      }
      fill_window();
    }
  }
  return delivered;
}

std::size_t remote_file::read_exact(std::uint64_t offset, std::byte* dst, std::size_t size) {
  std::size_t delivered = 0;
  while (delivered < size) {
    // One batch: as many requests as there are slots, issued together.
    std::vector<std::size_t> batch;
    std::uint64_t at = offset + delivered;
    const std::uint64_t end = offset + size;
    while (at < end && batch.size() < slots_.size()) {
      const std::size_t i = acquire_slot();
      const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(request_, end - at));
      issue_read(i, at, len, false);
      batch.push_back(i);
      at += len;
    }
    std::error_code first_error;
    std::uint64_t error_offset = 0;
    bool short_read = false;
    for (std::size_t i : batch) {
      while (slots_[i].state == slot_state::reading) take_completion(true);
      slot& s = slots_[i];
      if (s.error && !first_error) {
        first_error = s.error;
        error_offset = s.offset;
      }
      if (!first_error && !short_read) {
        std::memcpy(dst + delivered, slot_data(i), s.done);
        delivered += s.done;
        if (s.done < s.length) short_read = true;
      }
      s = slot{};
    }
    if (first_error) throw_io_error(first_error, "read at offset " + std::to_string(error_offset) + " of", path());
    if (short_read) break;
  }
  return delivered;
}

std::size_t remote_file::read(std::uint64_t offset, std::byte* dst, std::size_t size, cache_hint hint) {
  check();
  drain_writes();
  check();
  const std::uint64_t end = this->size();
  const std::size_t n = offset >= end ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(size, end - offset));
  if (n == 0) return 0;
  ensure_buffers();
  const bool in_window = !window_.empty() && offset >= slots_[window_.front()].offset && offset < window_end_;
  const bool sequential = window_slots_ > 0 && hint != cache_hint::random &&
                          (hint == cache_hint::sequential || offset == last_read_end_ || in_window);
  std::size_t got;
  if (sequential) {
    got = read_through_window(offset, dst, n);
  } else {
    drop_window();
    got = read_exact(offset, dst, n);
  }
  last_read_end_ = offset + got;
  return got;
}

// ---- writes --------------------------------------------------------------------------------

void remote_file::send_filling() {
  if (!filling_) return;
  const std::size_t i = *filling_;
  filling_.reset();
  write_bytes_queued_ -= request_ - slots_[i].length;  // the reservation becomes the real length
  wait_for_overlapping_writes(slots_[i].offset, slots_[i].length);
  issue_write(i);
}

void remote_file::wait_for_overlapping_writes(std::uint64_t offset, std::size_t length) {
  auto overlapping = [&] {
    return std::any_of(slots_.begin(), slots_.end(), [&](const slot& s) {
      return s.state == slot_state::writing && s.offset < offset + length && offset < s.offset + s.length;
    });
  };
  while (overlapping()) take_completion(true);
}

void remote_file::drain_writes() {
  send_filling();
  auto writing = [this] {
    return std::any_of(slots_.begin(), slots_.end(), [](const slot& s) { return s.state == slot_state::writing; });
  };
  while (writing()) take_completion(true);
}

void remote_file::drain_all() {
  send_filling();
  while (take_completion(true)) {
  }
}

void remote_file::write(std::uint64_t offset, const std::byte* src, std::size_t size) {
  check();
  if (size == 0) return;
  drop_window();
  ensure_buffers();
  std::uint64_t at = offset;
  std::size_t left = size;
  while (left > 0) {
    if (filling_) {
      slot& f = slots_[*filling_];
      if (f.offset + f.length != at || f.length == request_) send_filling();
    }
    if (!filling_) {
      // Room for one more slot within the bound, then a free slot.
      while (write_bytes_queued_ + request_ > write_limit_ && take_completion(true)) {
      }
      const std::size_t i = acquire_slot();
      slot& s = slots_[i];
      s = slot{};
      s.state = slot_state::filling;
      s.offset = at;
      filling_ = i;
      write_bytes_queued_ += request_;  // reserved now, adjusted when sent
    }
    slot& f = slots_[*filling_];
    const std::size_t n = std::min(left, request_ - f.length);
    std::memcpy(slot_data(*filling_) + f.length, src + (size - left), n);
    f.length += n;
    at += n;
    left -= n;
    if (f.length == request_) send_filling();
  }
  if (size_) size_ = std::max(*size_, offset + size);
  if (!options_.write_behind) {
    drain_writes();
    check();
  }
}

std::uint64_t remote_file::size() {
  if (!size_) {
    drain_writes();
    try {
      size_ = client_->fstat(file_).size;
    } catch (const std::system_error& e) {
      throw_io_error(e.code(), "size of", path());
    }
  }
  return *size_;
}

void remote_file::truncate(std::uint64_t size) {
  check();
  drop_window();
  drain_writes();
  check();
  try {
    client_->truncate(file_.path(), size);
  } catch (const std::system_error& e) {
    throw_io_error(e.code(), "truncate to " + std::to_string(size) + " bytes", path());
  }
  size_ = size;
}

void remote_file::close() {
  if (closed_) return;
  closed_ = true;
  std::error_code close_error;
  try {
    drop_window();
    drain_all();
  } catch (...) {
  }
  try {
    client_->close(file_);
  } catch (const std::system_error& e) {
    if (!adapters::open_lost(e.code())) close_error = e.code();  // a forgotten open is closed already
  }
  region_ = vnfs::memory_region();
  buffer_.reset();
  if (failed_) {
    failed_ = false;
    throw_io_error(failure_code_, failure_what_, path());
  }
  if (close_error) throw_io_error(close_error, "close", path());
}

}  // namespace vnfs::tpie::detail
