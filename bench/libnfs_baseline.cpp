// bench/libnfs_baseline — the libnfs baseline for the vNFS experiments: what a POSIX
// program does, through libnfs 4.0's synchronous API over NFSv3 (its mature path),
// one call at a time:
//   write:   for each of --files files: creat (O_CREAT|O_TRUNC), pwrite --size bytes, close
//   read:    for each file: open O_RDONLY, pread until --size bytes, close (contents checked)
//   stat:    stat64 of each file
//   readdir: opendir (libnfs reads the whole directory here), readdir to the end, closedir
//   copy:    what a copying program does from scratch: mount, list the directory, and for
//            each entry open, pread to the end, close, and write it to a local file
// repeated --repeat times; then the files are removed (unlink, rmdir) unless --keep.
// libnfs does not count its RPCs, so next to every time the JSON gives the number of
// library calls of each kind (the kernel-client-like pattern), not round trips.
//
// The server and the network path are the caller's: give a libnfs URL, e.g.
//   nfs://127.0.0.1/export?version=3                       (ports from rpcbind)
//   nfs://127.0.0.1/export?version=3&nfsport=P&mountport=M (no rpcbind: e.g. through
//                                                            vnfs-netdelay proxies)
// bench/baseline_netns.sh runs it against NFS-Ganesha in a private network namespace.
#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "bench_util.hpp"

#ifndef LIBNFS_VERSION_STRING  // from pkg-config, set by bench/CMakeLists.txt
#define LIBNFS_VERSION_STRING "unknown"
#endif

namespace po = boost::program_options;
using clock_type = std::chrono::steady_clock;

namespace {

/// One mounted libnfs context; every failing call throws with libnfs's message.
class nfs_session {
 public:
  explicit nfs_session(const std::string& url) : nfs_(nfs_init_context()) {
    if (nfs_ == nullptr) throw std::runtime_error("nfs_init_context failed");
    url_ = nfs_parse_url_dir(nfs_, url.c_str());
    if (url_ == nullptr) throw std::runtime_error("bad URL '" + url + "': " + error());
    // Every readdir goes to the server, as after a cache drop; no readahead.
    nfs_set_dircache(nfs_, 0);
    nfs_set_autoreconnect(nfs_, 0);
    check(nfs_mount(nfs_, url_->server, url_->path), std::string("mount ") + url_->server + ":" + url_->path);
  }
  ~nfs_session() {
    if (url_ != nullptr) nfs_destroy_url(url_);
    nfs_destroy_context(nfs_);
  }
  nfs_session(const nfs_session&) = delete;
  nfs_session& operator=(const nfs_session&) = delete;

  nfs_context* get() const { return nfs_; }
  std::string error() const {
    const char* e = nfs_get_error(nfs_);
    return e != nullptr ? e : "unknown error";
  }
  int check(int rc, const std::string& what) const {
    if (rc < 0) throw std::runtime_error(what + ": " + error() + " (" + std::strerror(-rc) + ")");
    return rc;
  }

 private:
  nfs_context* nfs_;
  nfs_url* url_ = nullptr;
};

/// Samples of one phase: seconds per repetition, and how many calls of each kind one
/// repetition makes.
struct phase {
  std::string name;
  std::vector<double> seconds;
  std::map<std::string, std::uint64_t> calls;
};

std::string file_name(const std::string& dir, unsigned i) {
  char name[32];
  std::snprintf(name, sizeof name, "/f%07u", i);
  return dir + name;
}

/// The bytes of file i: distinct per file and offset, so a read of the wrong file or
/// offset is caught.
void fill_contents(std::vector<char>& buf, unsigned i) {
  for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = static_cast<char>((k * 131 + i * 7 + (k >> 12)) & 0xff);
}

/// Writes `data` to the local file `path` (created or truncated); throws on failure.
void write_local(const std::string& path, const char* data, std::size_t n) {
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("create " + path + ": " + std::strerror(errno));
  for (std::size_t off = 0; off < n;) {
    ssize_t w = ::write(fd, data + off, n - off);
    if (w <= 0) {
      ::close(fd);
      throw std::runtime_error("write " + path + ": " + std::strerror(errno));
    }
    off += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) throw std::runtime_error("close " + path + ": " + std::strerror(errno));
}

/// The copy phase: a fresh mount, the listing of `dir`, and each file read whole and
/// written under `to`. Returns the number of files copied.
unsigned copy_directory(const std::string& url, const std::string& dir, const std::filesystem::path& to,
                        std::size_t io_size, std::map<std::string, std::uint64_t>& c) {
  nfs_session s(url);
  ++c["mount"];
  nfs_context* nfs = s.get();
  nfsdir* d = nullptr;
  s.check(nfs_opendir(nfs, dir.c_str(), &d), "opendir " + dir);
  ++c["opendir"];
  std::vector<std::string> names;
  for (nfsdirent* e; (e = nfs_readdir(nfs, d)) != nullptr;) {
    ++c["readdir"];
    if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0) names.emplace_back(e->name);
  }
  ++c["readdir"];
  nfs_closedir(nfs, d);
  ++c["closedir"];
  std::vector<char> buf;
  for (const auto& name : names) {
    std::string p = dir + "/" + name;
    nfsfh* fh = nullptr;
    s.check(nfs_open(nfs, p.c_str(), O_RDONLY, &fh), "open " + p);
    ++c["open(O_RDONLY)"];
    buf.clear();
    for (;;) {
      std::size_t at = buf.size();
      buf.resize(at + io_size);
      int m = s.check(nfs_pread(nfs, fh, at, io_size, buf.data() + at), "pread " + p);
      ++c["pread"];
      buf.resize(at + static_cast<std::size_t>(m));
      if (m == 0) break;
    }
    s.check(nfs_close(nfs, fh), "close " + p);
    ++c["close"];
    write_local((to / name).string(), buf.data(), buf.size());
  }
  return static_cast<unsigned>(names.size());
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url, out = "bench/results/libnfs_baseline.json", dir = "/libnfs-baseline", label;
  unsigned files = 100, repeat = 3;
  std::uint64_t size = 1024;
  std::size_t io_size = 1 << 20;
  bool keep = false;
  std::string copy_to;
  po::options_description desc(
      "Usage: libnfs_baseline --url nfs://HOST/EXPORT?version=3[&nfsport=P&mountport=M] [options]\n\n"
      "Writes, reads, stats and lists --files files of --size bytes through libnfs's\n"
      "synchronous API (one call at a time, as a POSIX program would), --repeat times, and\n"
      "writes the time of each phase and its number of library calls as JSON.\n\nOptions");
  desc.add_options()("help,h", "print this help")
      ("url", po::value(&url), "libnfs URL of the export (required)")
      ("files", po::value(&files)->default_value(files), "number of files, 1 to 1000000")
      ("size", po::value(&size)->default_value(size), "bytes per file, up to 1 GiB")
      ("io-size", po::value(&io_size)->default_value(io_size), "bytes per pread/pwrite call, up to 16 MiB")
      ("repeat", po::value(&repeat)->default_value(repeat), "repetitions of the phases, 1 to 100")
      ("dir", po::value(&dir)->default_value(dir), "directory under the export for the files (created)")
      ("label", po::value(&label), "free text stored in the JSON (e.g. the network path)")
      ("keep", po::bool_switch(&keep), "leave the files in place")
      ("copy-to", po::value(&copy_to), "local directory for the copy phase (default: a temporary one, removed)")
      ("out", po::value(&out)->default_value(out), "JSON output file");
  if (!vnfs::bench::parse_options(argc, argv, desc)) return 0;  // --help
  if (url.empty()) throw std::runtime_error("--url is required");
  if (files == 0 || files > 1'000'000 || size > (1ull << 30) || io_size == 0 || io_size > (16u << 20) ||
      repeat == 0 || repeat > 100 || dir.empty() || dir.front() != '/')
    throw std::runtime_error("bad parameters (see --help)");

  nfs_session s(url);
  nfs_context* nfs = s.get();
  if (int rc = nfs_mkdir(nfs, dir.c_str()); rc < 0 && rc != -EEXIST) s.check(rc, "mkdir " + dir);

  std::vector<char> data(static_cast<std::size_t>(size)), got(static_cast<std::size_t>(size));
  phase wr{"write"}, rd{"read"}, st{"stat"}, ls{"readdir"}, cp{"copy"};
  const bool own_copy_dir = copy_to.empty();
  std::filesystem::path copy_dir = own_copy_dir ? std::filesystem::temp_directory_path() /
                                                      ("libnfs-baseline-copy-" + std::to_string(::getpid()))
                                                : std::filesystem::path(copy_to);
  std::filesystem::create_directories(copy_dir);
  for (unsigned r = 0; r < repeat; ++r) {
    std::map<std::string, std::uint64_t> c;
    auto t0 = clock_type::now();
    for (unsigned i = 0; i < files; ++i) {
      fill_contents(data, i + r);
      std::string p = file_name(dir, i);
      nfsfh* fh = nullptr;
      s.check(nfs_open2(nfs, p.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644, &fh), "create " + p);
      ++c["open2(O_CREAT|O_TRUNC)"];
      for (std::uint64_t off = 0; off < size;) {
        std::uint64_t n = std::min<std::uint64_t>(io_size, size - off);
        int w = s.check(nfs_pwrite(nfs, fh, off, n, data.data() + off), "pwrite " + p);
        ++c["pwrite"];
        if (w == 0) throw std::runtime_error("pwrite " + p + ": wrote nothing");
        off += static_cast<std::uint64_t>(w);
      }
      s.check(nfs_close(nfs, fh), "close " + p);
      ++c["close"];
    }
    wr.seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
    wr.calls = std::exchange(c, {});

    t0 = clock_type::now();
    for (unsigned i = 0; i < files; ++i) {
      std::string p = file_name(dir, i);
      nfsfh* fh = nullptr;
      s.check(nfs_open(nfs, p.c_str(), O_RDONLY, &fh), "open " + p);
      ++c["open(O_RDONLY)"];
      std::uint64_t off = 0;
      while (off < size) {
        std::uint64_t n = std::min<std::uint64_t>(io_size, size - off);
        int m = s.check(nfs_pread(nfs, fh, off, n, got.data() + off), "pread " + p);
        ++c["pread"];
        if (m == 0) break;
        off += static_cast<std::uint64_t>(m);
      }
      s.check(nfs_close(nfs, fh), "close " + p);
      ++c["close"];
      fill_contents(data, i + r);
      if (off != size || std::memcmp(got.data(), data.data(), data.size()) != 0)
        throw std::runtime_error("read " + p + ": contents differ from what was written");
    }
    rd.seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
    rd.calls = std::exchange(c, {});

    t0 = clock_type::now();
    for (unsigned i = 0; i < files; ++i) {
      std::string p = file_name(dir, i);
      nfs_stat_64 sb{};
      s.check(nfs_stat64(nfs, p.c_str(), &sb), "stat " + p);
      ++c["stat64"];
      if (sb.nfs_size != size) throw std::runtime_error("stat " + p + ": size " + std::to_string(sb.nfs_size));
    }
    st.seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
    st.calls = std::exchange(c, {});

    t0 = clock_type::now();
    nfsdir* d = nullptr;
    s.check(nfs_opendir(nfs, dir.c_str(), &d), "opendir " + dir);
    ++c["opendir"];
    unsigned entries = 0;
    for (std::uint64_t guard = 0; guard < 2ull * files + 16; ++guard) {
      nfsdirent* e = nfs_readdir(nfs, d);
      ++c["readdir"];
      if (e == nullptr) break;
      if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0) ++entries;
    }
    nfs_closedir(nfs, d);
    ++c["closedir"];
    ls.seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
    ls.calls = std::exchange(c, {});
    if (entries != files)
      throw std::runtime_error("readdir " + dir + ": " + std::to_string(entries) + " entries, expected " +
                               std::to_string(files));

    t0 = clock_type::now();
    unsigned copied = copy_directory(url, dir, copy_dir, io_size, c);
    cp.seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
    cp.calls = std::exchange(c, {});
    if (copied != files)
      throw std::runtime_error("copy " + dir + ": " + std::to_string(copied) + " files, expected " + std::to_string(files));
    for (unsigned i = 0; i < files; ++i) {  // the copies hold what was written
      fill_contents(data, i + r);
      std::ifstream in(copy_dir / file_name("", i).substr(1), std::ios::binary);
      std::vector<char> back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (back != data) throw std::runtime_error("copy of " + file_name(dir, i) + ": contents differ");
    }
    std::fprintf(stderr, "repeat %u: write %.3f s, read %.3f s, stat %.3f s, readdir %.3f s, copy %.3f s\n", r + 1,
                 wr.seconds.back(), rd.seconds.back(), st.seconds.back(), ls.seconds.back(), cp.seconds.back());
  }
  if (own_copy_dir) std::filesystem::remove_all(copy_dir);
  if (!keep) {
    for (unsigned i = 0; i < files; ++i) s.check(nfs_unlink(nfs, file_name(dir, i).c_str()), "unlink");
    s.check(nfs_rmdir(nfs, dir.c_str()), "rmdir " + dir);
  }

  std::ofstream f = vnfs::bench::open_results(out, "libnfs_baseline");
  f << std::setprecision(6);
  f << "  \"client\": \"libnfs " << LIBNFS_VERSION_STRING << " (synchronous API, NFSv3)\",\n";
  f << "  \"parameters\": {\"url\": \"" << vnfs::bench::json_escape(url) << "\", \"label\": \""
    << vnfs::bench::json_escape(label) << "\", \"files\": " << files << ", \"size\": " << size
    << ", \"io_size\": " << io_size << ", \"repeat\": " << repeat << ", \"dircache\": false},\n";
  f << "  \"phases\": [\n";
  const phase* all[] = {&wr, &rd, &st, &ls, &cp};
  constexpr std::size_t phases = std::size(all);
  for (std::size_t k = 0; k < phases; ++k) {
    const phase& p = *all[k];
    std::uint64_t total_calls = 0;
    f << "    {\"phase\": \"" << p.name << "\", \"seconds\": [";
    for (std::size_t i = 0; i < p.seconds.size(); ++i) f << (i ? "," : "") << p.seconds[i];
    f << "], \"median_seconds\": " << vnfs::bench::median(p.seconds) << ", \"calls_per_repeat\": {";
    bool first = true;
    for (const auto& [name, n] : p.calls) {
      f << (first ? "" : ", ") << "\"" << vnfs::bench::json_escape(name) << "\": " << n;
      first = false;
      total_calls += n;
    }
    f << "}, \"calls_total\": " << total_calls << "}" << (k + 1 < phases ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  std::cerr << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "libnfs_baseline: " << e.what() << "\n";
  return 1;
}
