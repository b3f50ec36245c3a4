// Example: an event-driven HTTP/1.1 file server (Boost.Beast) that serves files from a vnfs
// URL through the asynchronous API.
//
//   http_server --listen 127.0.0.1:8080 --url nfs://HOST:PORT/export
//   http_server --listen 127.0.0.1:8080                  (embedded vnfsd, sample files)
//   http_server --listen 127.0.0.1:8080 --export DIR     (embedded vnfsd serving DIR)
//
// GET /a/b.txt answers the file a/b.txt under the URL (HEAD: the headers only); 404 when
// there is no such regular file, 400 for a malformed request or a path with "." or ".."
// components, 405 for other methods. Responses carry Content-Length; connections are kept
// alive as HTTP/1.1 says.
//
// Everything HTTP runs on ONE thread (one io_context), with any number of requests in
// flight. File data is never copied by the library: each request streams its file through a
// slice of one registered buffer, read with client::async_read (completion handler bound to
// the io_context) and written to the socket from the same memory. Metadata calls (open,
// fstat, close) use the completion-group form; a bridge thread waits on the group and posts
// each completion back to the io_context.
#include <fcntl.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <utility>  // before Asio (Boost 1.74's awaitable.hpp needs std::exchange)
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/program_options.hpp>

#include "vnfs/client.hpp"
#include "vnfs/embedded_server.hpp"
#include "vnfs/host_port.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace po = boost::program_options;
using tcp = asio::ip::tcp;

namespace {

/// Runs continuations of completion-group operations on the io_context. A dedicated thread
/// waits on the group (waiting would block the io_context) and posts each completion's
/// continuation, found by its tag.
class group_bridge {
 public:
  using continuation = std::function<void(std::error_code)>;

  explicit group_bridge(asio::io_context& io) : io_(io), thread_([this] { loop(); }) {}
  ~group_bridge() {
    stop_ = true;
    thread_.join();
  }
  group_bridge(const group_bridge&) = delete;
  group_bridge& operator=(const group_bridge&) = delete;

  /// Reserves a tag whose completion will run `k` on the io_context. Call before starting the
  /// operation, so the completion always finds its continuation.
  std::uint64_t expect(continuation k) {
    std::lock_guard lock(mutex_);
    pending_.emplace(next_tag_, std::move(k));
    return next_tag_++;
  }
  vnfs::completion_group& group() { return group_; }

 private:
  void loop() {
    while (!stop_) {
      std::optional<vnfs::completion> e = group_.wait_for(std::chrono::milliseconds(100));
      if (!e) continue;
      continuation k;
      {
        std::lock_guard lock(mutex_);
        auto it = pending_.find(e->tag);
        if (it == pending_.end()) continue;
        k = std::move(it->second);
        pending_.erase(it);
      }
      asio::post(io_, [k = std::move(k), status = e->status] { k(status); });
    }
  }

  asio::io_context& io_;
  vnfs::completion_group group_;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, continuation> pending_;
  std::uint64_t next_tag_ = 1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// One registered region cut into equal slices. A response holds one slice while it streams
/// its file; when none is free, requests wait their turn in arrival order. Used on the
/// io_context thread only.
class buffer_pool {
 public:
  buffer_pool(vnfs::client& c, std::size_t count, std::size_t slice_size)
      : memory_(count * slice_size), slice_size_(slice_size),
        region_(c.register_memory(memory_.data(), memory_.size(), vnfs::access::read)) {
    for (std::size_t i = 0; i < count; ++i) free_.push_back(i);
  }

  void acquire(std::function<void(vnfs::memory_slice)> k) {
    if (free_.empty()) {
      waiting_.push_back(std::move(k));
      return;
    }
    std::size_t i = free_.back();
    free_.pop_back();
    k(region_.slice(i * slice_size_, slice_size_));
  }
  void release(const vnfs::memory_slice& s) {
    std::size_t i = static_cast<std::size_t>(s.data() - memory_.data()) / slice_size_;
    if (waiting_.empty()) {
      free_.push_back(i);
      return;
    }
    auto k = std::move(waiting_.front());
    waiting_.pop_front();
    k(region_.slice(i * slice_size_, slice_size_));
  }

 private:
  std::vector<std::byte> memory_;
  std::size_t slice_size_;
  vnfs::memory_region region_;
  std::vector<std::size_t> free_;
  std::deque<std::function<void(vnfs::memory_slice)>> waiting_;
};

/// The file a request target names, relative to the client's root: the path part only (no
/// query), percent-decoded, split at '/'. Nothing for a target that does not start with '/',
/// a bad %-escape, a NUL, or a "." or ".." component.
std::optional<std::string> target_to_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return std::nullopt;
  target = target.substr(0, target.find_first_of("?#"));
  std::string decoded;
  for (std::size_t i = 0; i < target.size(); ++i) {
    char ch = target[i];
    if (ch == '%') {
      unsigned v = 0;
      if (i + 2 >= target.size()) return std::nullopt;
      auto [end, ec] = std::from_chars(target.data() + i + 1, target.data() + i + 3, v, 16);
      if (ec != std::errc() || end != target.data() + i + 3) return std::nullopt;
      ch = static_cast<char>(v);
      i += 2;
    }
    if (ch == '\0') return std::nullopt;
    decoded.push_back(ch);
  }
  std::string path;
  std::size_t start = 0;
  while (start <= decoded.size()) {
    std::size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    std::string_view part(decoded.data() + start, end - start);
    if (part == "." || part == "..") return std::nullopt;
    if (!part.empty()) {
      if (!path.empty()) path += '/';
      path += part;
    }
    start = end + 1;
  }
  return path;
}

http::status status_for(std::error_code ec) {
  if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory ||
      ec == std::errc::is_a_directory || ec == std::errc::too_many_symbolic_link_levels ||
      ec == std::errc::filename_too_long)
    return http::status::not_found;
  if (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted)
    return http::status::forbidden;
  return http::status::internal_server_error;
}

const char* content_type(std::string_view path) {
  auto ends_with = [&](std::string_view s) { return path.ends_with(s); };
  if (ends_with(".txt")) return "text/plain; charset=utf-8";
  if (ends_with(".html") || ends_with(".htm")) return "text/html; charset=utf-8";
  if (ends_with(".json")) return "application/json";
  if (ends_with(".css")) return "text/css";
  if (ends_with(".js")) return "text/javascript";
  if (ends_with(".png")) return "image/png";
  if (ends_with(".jpg") || ends_with(".jpeg")) return "image/jpeg";
  return "application/octet-stream";
}

struct server_context {
  vnfs::client& client;
  group_bridge& bridge;
  buffer_pool& pool;
};

/// One HTTP connection: reads a request, answers it, and so on while it is kept alive. Owned
/// by the handlers in flight (shared_from_this); all its code runs on the io_context thread.
class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket s, server_context& ctx) : socket_(std::move(s)), ctx_(ctx) {}

  void start() { read_request(); }

 private:
  void read_request() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
  }

  void on_request(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return shutdown();
    if (ec) {
      // A malformed request: answer 400 if the connection still works, then close it.
      // (Errors of the socket itself, or a request cut short, get no answer.)
      keep_alive_ = false;
      if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
          ec != http::error::partial_message)
        return send_error(http::status::bad_request);
      return abort();
    }
    const auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    head_ = req.method() == http::verb::head;
    if (req.method() != http::verb::get && !head_) return send_error(http::status::method_not_allowed);
    std::optional<std::string> path = target_to_path(std::string_view(req.target().data(), req.target().size()));
    if (!path) return send_error(http::status::bad_request);
    path_ = std::move(*path);
    if (path_.empty()) return send_error(http::status::not_found);  // the root: a directory

    std::uint64_t tag = ctx_.bridge.expect([self = shared_from_this()](std::error_code e) { self->on_open(e); });
    ctx_.client.open(path_, O_RDONLY, 0, &file_, ctx_.bridge.group(), tag);
  }

  void on_open(std::error_code ec) {
    if (ec) return send_error(status_for(ec));
    std::uint64_t tag = ctx_.bridge.expect([self = shared_from_this()](std::error_code e) { self->on_fstat(e); });
    ctx_.client.fstat(file_, &stat_, ctx_.bridge.group(), tag);
  }

  void on_fstat(std::error_code ec) {
    if (ec || stat_.type != vnfs::file_type::regular) {
      close_file();
      return send_error(ec ? status_for(ec) : http::status::not_found);
    }
    offset_ = 0;
    remaining_ = stat_.size;
    header_ = {};
    header_.version(version_);
    header_.result(http::status::ok);
    header_.set(http::field::server, "vnfs-http-example");
    header_.set(http::field::content_type, content_type(path_));
    header_.content_length(stat_.size);
    header_.keep_alive(keep_alive_);
    http::async_write(socket_, header_, [self = shared_from_this()](beast::error_code e, std::size_t) {
      if (e) return self->abort();
      if (self->head_ || self->remaining_ == 0) return self->finish();
      self->ctx_.pool.acquire([self](vnfs::memory_slice s) {
        self->slice_ = s;
        self->read_chunk();
      });
    });
  }

  /// Reads the next chunk of the file into this response's slice. The handler is bound to the
  /// socket's executor, so it runs on the io_context thread, not on the client's.
  void read_chunk() {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, slice_.size()));
    ctx_.client.async_read(
        file_, offset_, slice_.sub(0, n),
        asio::bind_executor(socket_.get_executor(), [self = shared_from_this()](std::error_code ec, std::size_t got) {
          // A failed or short read (the file shrank) cannot be reported once the headers
          // promised Content-Length bytes: the connection is dropped.
          if (ec || got == 0) {
            std::cerr << "http_server: read of " << self->path_ << " at " << self->offset_ << " failed: "
                      << (ec ? ec.message() : "end of file") << "\n";
            return self->abort();
          }
          asio::async_write(self->socket_, asio::buffer(self->slice_.data(), got),
                            [self](beast::error_code e, std::size_t sent) {
                              if (e) return self->abort();
                              self->offset_ += sent;
                              self->remaining_ -= sent;
                              if (self->remaining_ > 0) return self->read_chunk();
                              self->finish();
                            });
        }));
  }

  void finish() {
    release_slice();
    close_file();
    if (keep_alive_) return read_request();
    shutdown();
  }

  void abort() {
    release_slice();
    close_file();
    beast::error_code ignored;
    socket_.close(ignored);
  }

  void send_error(http::status status) {
    error_ = {};
    error_.version(version_);
    error_.result(status);
    error_.set(http::field::server, "vnfs-http-example");
    error_.set(http::field::content_type, "text/plain; charset=utf-8");
    error_.keep_alive(keep_alive_);
    if (!head_) error_.body() = std::to_string(static_cast<unsigned>(status)) + " " + std::string(http::obsolete_reason(status)) + "\n";
    error_.prepare_payload();
    if (head_) error_.content_length(0);
    http::async_write(socket_, error_, [self = shared_from_this()](beast::error_code e, std::size_t) {
      if (e) return self->abort();
      if (self->keep_alive_) return self->read_request();
      self->shutdown();
    });
  }

  void release_slice() {
    if (slice_.data()) ctx_.pool.release(slice_);
    slice_ = {};
  }

  /// Closes the open file in the background; the response does not wait for it. The
  /// continuation keeps the file object alive until the close has completed.
  void close_file() {
    if (!file_) return;
    vnfs::file f = std::move(file_);
    file_ = {};
    std::uint64_t tag = ctx_.bridge.expect([f](std::error_code) {});
    ctx_.client.close(f, ctx_.bridge.group(), tag);
  }

  void shutdown() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  tcp::socket socket_;
  server_context& ctx_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool head_ = false;
  std::string path_;
  vnfs::file file_;
  vnfs::file_stat stat_;
  std::uint64_t offset_ = 0, remaining_ = 0;
  vnfs::memory_slice slice_;
  http::response<http::empty_body> header_;
  http::response<http::string_body> error_;
};

void accept_loop(tcp::acceptor& acceptor, server_context& ctx) {
  acceptor.async_accept([&acceptor, &ctx](beast::error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<session>(std::move(s), ctx)->start();
    accept_loop(acceptor, ctx);
  });
}

/// A few files to serve when no URL and no directory is given.
void write_samples(const std::filesystem::path& dir) {
  std::ofstream(dir / "index.html") << "<!doctype html>\n<title>vnfs</title>\n<p>Served from NFSv4.1 by vnfs.</p>\n";
  std::ofstream(dir / "hello.txt") << "Hello from vnfs over HTTP.\n";
  std::filesystem::create_directory(dir / "data");
  std::ofstream bin(dir / "data" / "1MiB.bin", std::ios::binary);
  for (std::uint32_t i = 0; i < (1u << 20); ++i) bin.put(static_cast<char>((i * 2654435761u) >> 24));
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:8080", url, export_dir;
  std::size_t buffers = 32, buffer_size = 256 * 1024;
  po::options_description desc(
      "Usage: http_server [--listen HOST:PORT] [--url URL | --export DIR]\n\n"
      "Serves GET/HEAD of files under a vnfs URL over HTTP/1.1. Without --url it starts an\n"
      "embedded vnfsd on DIR (--export) or on a temporary directory with sample files.\n"
      "Once listening it prints 'http_server listening on http://HOST:PORT'.\n\nOptions");
  desc.add_options()
      ("help,h", "print this help and exit")
      ("listen", po::value(&listen)->value_name("HOST:PORT")->default_value(listen), "address to listen on; PORT 0 picks a free port")
      ("url", po::value(&url)->value_name("URL"), "nfs://HOST[:PORT]/PATH or file:///PATH to serve")
      ("export", po::value(&export_dir)->value_name("DIR"), "without --url: directory the embedded vnfsd serves")
      ("buffers", po::value(&buffers)->default_value(buffers), "registered buffers: responses streaming at once")
      ("buffer-size", po::value(&buffer_size)->default_value(buffer_size), "bytes per registered buffer (one read)");
  std::string host;
  std::uint16_t port = 0;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    const std::optional<vnfs::host_port> at = vnfs::parse_host_port(listen);
    if (!at) throw po::error("--listen wants HOST:PORT, not '" + listen + "'");
    host = at->host;
    port = at->port;
    if (!url.empty() && !export_dir.empty()) throw po::error("--url and --export exclude each other");
    if (buffers == 0 || buffer_size == 0) throw po::error("--buffers and --buffer-size must be positive");
  } catch (const po::error& e) {
    std::cerr << "http_server: " << e.what() << "\n" << desc << "\n";
    return 2;
  }

  try {
    std::optional<vnfs::embedded_server> server;
    if (url.empty()) {
      server.emplace(vnfs::server_options{.export_dir = export_dir});  // empty: a temporary directory
      if (export_dir.empty()) write_samples(server->export_dir());
      server->start();
      url = server->url();
    }

    // Destruction runs bottom-up: the bridge thread and the registered buffers go before the
    // io_context (whose pending handlers hold sessions), and all of them before the client.
    vnfs::client client = vnfs::client::connect(url);
    asio::io_context io(1);
    buffer_pool pool(client, buffers, buffer_size);
    group_bridge bridge(io);
    server_context ctx{client, bridge, pool};

    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address(host), port));
    accept_loop(acceptor, ctx);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](beast::error_code, int) {
      beast::error_code ignored;
      acceptor.close(ignored);
      io.stop();
    });

    const auto ep = acceptor.local_endpoint();
    const std::string addr = ep.address().is_v6() ? "[" + ep.address().to_string() + "]" : ep.address().to_string();
    std::cout << "http_server listening on http://" << addr << ":" << ep.port()
              << " serving " << url << std::endl;
    io.run();
    client.close();  // completes whatever is still in flight (errc::closed)
  } catch (const std::exception& e) {
    std::cerr << "http_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
