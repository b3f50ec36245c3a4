// vnfs TPIE adapter (internal): the block transfer engine of papers/003 §5.1 for one file on
// vnfs. Reads ahead and writes behind with the asynchronous calls, one completion group and
// memory registered with the client.
//
// Memory: one registered region per file (allocated at the first read or write), cut into
// slots of engine_options::request_bytes; every READ lands in a slot and every WRITE leaves
// from one, so the transport copies nothing (client_stats::payload_bytes_copied stays 0).
// If the client refuses the registration (its cap), the slots are plain memory and the
// transport copies.
//
// Reads. With cache_hint::random, with read-ahead off, and with cache_hint::normal until a
// read continues where the previous one ended, a read fetches exactly its bytes (one READ per
// request_bytes, issued together) and waits. Otherwise the file has a window: READs of
// consecutive requests from the read position up to read_ahead_bytes ahead (never past the
// known end of file); read_i copies from the oldest ones in order, and each slot it uses up
// is reissued further ahead at once. A read outside the window, a write and a truncate drop
// the window (READs still in flight are waited for only when their slot is needed).
//
// Writes. write_i copies into the slot being filled (consecutive writes share it up to
// request_bytes); a full slot, a write elsewhere, any read, a truncate and close send it.
// At most write_behind_bytes are filling or in flight: a write beyond that waits for the
// oldest. A failed WRITE is kept and thrown by check() (each accessor call starts with it)
// or by close(). Reads wait for every queued write first, so they see them.
//
// Size: known from open_wo (0), else fetched with one GETATTR at the first need (after the
// writes queued so far have landed); then kept from this file's own writes and truncates
// (the file is assumed not to be changed by others while it is open).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "open_file.hpp"
#include "vnfs/client.hpp"
#include "vnfs/tpie/engine_options.hpp"
#include "vnfs/tpie/transfer_stats.hpp"

namespace vnfs::tpie::detail {

class remote_file final : public open_file {
 public:
  /// `f` is open on `c` as `remote_path`; `size` when known (after O_TRUNC). `stats` outlives
  /// this object (the accessor's counters).
  remote_file(std::shared_ptr<vnfs::client> c, vnfs::file f, std::string path, engine_options options,
              std::optional<std::uint64_t> size, transfer_stats& stats);
  /// Waits for what is in flight and closes, reporting nothing (close() reports).
  ~remote_file() override;

  bool on_vnfs() const override { return true; }
  std::size_t read(std::uint64_t offset, std::byte* dst, std::size_t size, cache_hint hint) override;
  void write(std::uint64_t offset, const std::byte* src, std::size_t size) override;
  std::uint64_t size() override;
  void truncate(std::uint64_t size) override;
  void check() override;
  void close() override;

 private:
  enum class slot_state { free, reading, ready, filling, writing };
  struct slot {
    slot_state state = slot_state::free;
    std::uint64_t offset = 0;   ///< file offset of the slot's first byte
    std::size_t length = 0;     ///< bytes asked for (read) or held (write)
    std::size_t done = 0;       ///< read: bytes arrived; write: bytes the server took
    std::size_t consumed = 0;   ///< read: bytes delivered to the application
    std::error_code error;
    bool ahead = false;         ///< read issued before any read_i asked for it
    bool abandoned = false;     ///< read dropped from the window while in flight
  };

  void ensure_buffers();
  std::byte* slot_data(std::size_t i) { return buffer_.get() + i * request_; }
  void issue_read(std::size_t i, std::uint64_t offset, std::size_t length, bool ahead);
  void issue_write(std::size_t i);
  /// Takes one completion (blocking when `block`); false if none was ready.
  bool take_completion(bool block);
  void on_completion(std::size_t i, std::error_code ec, std::size_t bytes);
  /// A free slot, waiting for completions until one is; never returns a slot in the window.
  std::size_t acquire_slot();
  std::optional<std::size_t> free_slot() const;

  void drop_window();
  void fill_window();
  std::size_t read_through_window(std::uint64_t offset, std::byte* dst, std::size_t size);
  std::size_t read_exact(std::uint64_t offset, std::byte* dst, std::size_t size);

  /// Sends the slot being filled, if any.
  void send_filling();
  /// send_filling, then waits until no WRITE is in flight.
  void drain_writes();
  void drain_all();
  void note_failure(std::error_code ec, const std::string& what);

  std::shared_ptr<vnfs::client> client_;
  vnfs::file file_;
  engine_options options_;
  transfer_stats& stats_;
  std::size_t request_;           ///< bytes per slot
  std::size_t window_slots_;      ///< read-ahead depth in slots (0: no read-ahead)
  std::size_t write_limit_;       ///< write-behind bound in bytes
  std::vector<slot> slots_;
  std::unique_ptr<std::byte, void (*)(void*)> buffer_{nullptr, nullptr};
  vnfs::memory_region region_;
  vnfs::completion_group group_;

  std::optional<std::uint64_t> size_;
  std::deque<std::size_t> window_;      ///< slots of the read window, in file order
  std::uint64_t window_end_ = 0;        ///< offset just past the window's last READ
  std::uint64_t last_read_end_ = UINT64_MAX;
  std::optional<std::size_t> filling_;  ///< slot collecting consecutive writes
  std::size_t write_bytes_queued_ = 0;  ///< filling + in flight
  bool failed_ = false;                 ///< a failure is waiting to be thrown
  std::error_code failure_code_;
  std::string failure_what_;
  bool closed_ = false;
};

}  // namespace vnfs::tpie::detail
