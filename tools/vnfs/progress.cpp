// vnfs command line: the terminal progress bar.
#include "progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace vnfs::cli {

namespace {

progress* active = nullptr;

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

progress::progress(std::string verb) : verb_(std::move(verb)), enabled_(::isatty(STDERR_FILENO) == 1) {
  start_ = std::chrono::steady_clock::now();
  if (const char* d = std::getenv("VNFS_PROGRESS_DELAY_MS")) {
    char* end = nullptr;
    long ms = std::strtol(d, &end, 10);
    if (end != d && *end == '\0' && ms >= 0) delay_ = std::chrono::milliseconds(ms);
  }
  if (enabled_) active = this;
}

progress::~progress() {
  if (active == this) {
    erase_active();
    active = nullptr;
  }
}

void progress::expect(std::uint64_t files, std::uint64_t bytes) {
  total_files_ += files;
  total_bytes_ += bytes;
}

void progress::advance(std::uint64_t files, std::uint64_t bytes) {
  files_ += files;
  bytes_ += bytes;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < delay_) return;
  const bool complete = files_ >= total_files_ && bytes_ >= total_bytes_;
  if (shown_ && !complete && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw();
}

void progress::erase_active() {
  if (!active || !active->shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  active->shown_ = false;
}

void progress::draw() {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string text = verb_ + " " + std::to_string(files_) + "/" + std::to_string(total_files_) + " files, " +
                     human_bytes(static_cast<double>(bytes_)) + "/" + human_bytes(static_cast<double>(total_bytes_)) +
                     ", " + human_bytes(seconds > 0 ? static_cast<double>(bytes_) / seconds : 0) + "/s ";
  std::size_t width = terminal_width();
  double done = total_files_ + total_bytes_ == 0
                    ? 1.0
                    : (static_cast<double>(files_) + static_cast<double>(bytes_) / 65536.0) /
                          (static_cast<double>(total_files_) + static_cast<double>(total_bytes_) / 65536.0);
  done = std::clamp(done, 0.0, 1.0);
  if (width > text.size() + 12) {
    std::size_t bar = std::min<std::size_t>(width - text.size() - 3, 40);
    auto filled = static_cast<std::size_t>(done * static_cast<double>(bar));
    text += "[" + std::string(filled, '#') + std::string(bar - filled, '.') + "]";
  }
  if (text.size() >= width) text.resize(width - 1);
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

}  // namespace vnfs::cli
