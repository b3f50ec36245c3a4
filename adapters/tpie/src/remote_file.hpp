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
// Server restart: the client recovers its session, not the server's opens. A READ or WRITE
// answered with a forgotten open (NFS4ERR_STALE_STATEID and kin) opens the file again by its
// path (same access, never creating or truncating) and is sent again; requests that were in
// flight with the old open are resent without another open. Limitation: UNSTABLE writes the
// server acknowledged and then truly lost (a machine crash, not a process restart) are not
// detected, since the write verifier is kept per open.
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
  remote_file(std::shared_ptr<vnfs::client> c, vnfs::file f, int access_mode, std::string path,
              engine_options options, std::optional<std::uint64_t> size, transfer_stats& stats);
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
    unsigned generation = 0;    ///< which open of the file the request was sent with
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

  /// A read-ahead slot leaves the window unread: counted as discarded, and freed (or, with
  /// its READ still in flight, marked abandoned so the completion frees it).
  void retire_window_slot(slot& s);
  void drop_window();
  void fill_window();
  std::size_t read_through_window(std::uint64_t offset, std::byte* dst, std::size_t size);
  std::size_t read_exact(std::uint64_t offset, std::byte* dst, std::size_t size);

  /// Sends the slot being filled, if any.
  void send_filling();
  /// Waits until no WRITE in flight overlaps [offset, offset + length): the server may apply
  /// WRITEs in flight in any order, so an overwrite goes out only after what it overwrites,
  /// and the later bytes win as they do in a local file.
  void wait_for_overlapping_writes(std::uint64_t offset, std::size_t length);
  /// send_filling, then waits until no WRITE is in flight.
  void drain_writes();
  void drain_all();
  void note_failure(std::error_code ec, const std::string& what);
  /// For a request of open `generation` that failed with `ec`: whether to send it again,
  /// opening the file again first if that open is the current one.
  bool recovered(std::error_code ec, unsigned generation);

  std::shared_ptr<vnfs::client> client_;
  vnfs::file file_;
  int access_mode_;               ///< O_RDONLY or O_RDWR, for opening again
  unsigned generation_ = 0;       ///< opens made after the first
  unsigned recoveries_in_a_row_ = 0;
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
