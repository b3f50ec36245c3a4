#include <catch2/catch.hpp>

#include "vnfs/error.hpp"
#include "vnfs/host_port.hpp"
#include "vnfs/url.hpp"

using vnfs::parse_url;

namespace {

// The error code and the part of the message that names what is wrong.
void require_bad(const char* text, const char* what) {
  try {
    parse_url(text);
    FAIL("accepted " << text);
  } catch (const std::system_error& e) {
    CHECK(e.code() == vnfs::errc::bad_url);
    INFO(e.what());
    CHECK(std::string(e.what()).find(what) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("nfs URLs: host, default and explicit port, path") {
  auto u = parse_url("nfs://127.0.0.1/export");
  CHECK(u.scheme == "nfs");
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == 2049);
  CHECK(u.path == "/export");
  CHECK(u.query.empty());

  u = parse_url("nfs://server.example-1.org:20490/a/b");
  CHECK(u.host == "server.example-1.org");
  CHECK(u.port == 20490);
  CHECK(u.path == "/a/b");

  u = parse_url("NFS://h:1");
  CHECK(u.scheme == "nfs");
  CHECK(u.port == 1);
  CHECK(u.path == "/");

  u = parse_url("nfs://h:65535/");
  CHECK(u.port == 65535);
  CHECK(u.path == "/");
}

TEST_CASE("nfs URL paths are decoded and normalized") {
  CHECK(parse_url("nfs://h//a///b/./c/").path == "/a/b/c");
  CHECK(parse_url("nfs://h/a%20b/%41").path == "/a b/A");
  CHECK(parse_url("nfs://h/.").path == "/");
}

TEST_CASE("IPv6 hosts in brackets") {
  auto u = parse_url("nfs://[::1]:2050/x");
  CHECK(u.host == "::1");
  CHECK(u.port == 2050);
  CHECK(u.path == "/x");
  u = parse_url("nfs://[fe80::1:2]/");
  CHECK(u.host == "fe80::1:2");
  CHECK(u.port == 2049);
  u = parse_url("nfs://[::ffff:10.0.0.1]");
  CHECK(u.host == "::ffff:10.0.0.1");
}

TEST_CASE("nfs+rdma URLs: default port 20049 and query parameters") {
  auto u = parse_url("nfs+rdma://10.0.0.2/exp?provider=cma&inline=4096");
  CHECK(u.scheme == "nfs+rdma");
  CHECK(u.host == "10.0.0.2");
  CHECK(u.port == 20049);
  CHECK(u.path == "/exp");
  REQUIRE(u.query.size() == 2);
  CHECK(u.query.at("provider") == "cma");
  CHECK(u.query.at("inline") == "4096");

  u = parse_url("nfs+rdma://[::1]:7000/e?provider=verbs&flag&x=a%3Db");
  CHECK(u.port == 7000);
  CHECK(u.query.at("provider") == "verbs");
  CHECK(u.query.at("flag") == "");
  CHECK(u.query.at("x") == "a=b");
}

TEST_CASE("file URLs") {
  auto u = parse_url("file:///tmp/data");
  CHECK(u.scheme == "file");
  CHECK(u.host == "");
  CHECK(u.port == 0);
  CHECK(u.path == "/tmp/data");
  CHECK(parse_url("file:///").path == "/");
  CHECK(parse_url("file://localhost/srv/x/").path == "/srv/x");
}

TEST_CASE("bad URLs name what is wrong") {
  require_bad("", "no scheme");
  require_bad("/tmp/x", "no scheme");
  require_bad("://h/x", "no scheme");
  require_bad("http://h/x", "unknown scheme 'http'");
  require_bad("nfs:/h/x", "no scheme");
  require_bad("nfs:///x", "no host");
  require_bad("nfs://:2049/x", "no host");
  require_bad("nfs://h:/x", "empty port");
  require_bad("nfs://h:20a9/x", "not a number");
  require_bad("nfs://h:65536/x", "out of range");
  require_bad("nfs://h:99999999999999999999/x", "out of range");
  require_bad("nfs://h:0/x", "port 0");
  require_bad("nfs://user@h/x", "user information");
  require_bad("nfs://h/a/../b", "'..'");
  require_bad("nfs://h/a/%2E%2E/b", "'..'");
  require_bad("nfs://h/a%2", "percent escape");
  require_bad("nfs://h/a%zz", "percent escape");
  require_bad("nfs://h/a%00b", "%00");
  require_bad("nfs://h/a b", "space");
  require_bad("nfs://h/x#frag", "fragment");
  require_bad("nfs://[::1/x", "']'");
  require_bad("nfs://[]/x", "empty IPv6");
  require_bad("nfs://[1.2.3.4]/x", "not an IPv6");
  require_bad("nfs://[::1]x/y", "after ']'");
  require_bad("nfs://[::g]/y", "IPv6");
  require_bad("nfs://h!st/x", "bad character '!'");
  require_bad("nfs://h/x?=v", "without a name");
  require_bad("nfs://h/x?a=1&a=2", "given twice");
  require_bad("file://host/x", "no host");
  require_bad("file://", "no path");
}

TEST_CASE("try_parse_url: the reason instead of an exception") {
  std::string reason;
  CHECK_FALSE(vnfs::try_parse_url("nfs:///x", reason));
  CHECK(reason == "no host");
  CHECK_FALSE(vnfs::try_parse_url("ftp://h/x", reason));
  CHECK(reason == "unknown scheme 'ftp' (nfs, nfs+rdma or file)");
  auto u = vnfs::try_parse_url("nfs://h/a", reason);
  REQUIRE(u);
  CHECK(u->path == "/a");
  try {
    parse_url("nfs:///x");
    FAIL("accepted nfs:///x");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()) == "vnfs: bad URL 'nfs:///x': no host: " + e.code().message());
  }
}

TEST_CASE("to_string writes what parse_url reads back") {
  CHECK(vnfs::to_string(parse_url("NFS://h/a/./b/")) == "nfs://h:2049/a/b");
  CHECK(vnfs::to_string(parse_url("nfs+rdma://[::1]/x?provider=cma")) == "nfs+rdma://[::1]:20049/x?provider=cma");
  CHECK(vnfs::to_string(parse_url("file://localhost/tmp/x")) == "file:///tmp/x");
  CHECK(vnfs::to_string(parse_url("nfs://h:7")) == "nfs://h:7/");
  for (const char* text : {"nfs://h:1/a%20b/%25/c%3Fd", "nfs+rdma://10.0.0.2:9/e?flag&provider=verbs&x=a%3Db%26c",
                           "file:///a%23b/%C3%A9", "nfs://[fe80::1:2]:3/"}) {
    INFO(text);
    vnfs::url u = parse_url(text);
    CHECK(vnfs::to_string(u) == text);
    vnfs::url back = parse_url(vnfs::to_string(u));
    CHECK(back.scheme == u.scheme);
    CHECK(back.host == u.host);
    CHECK(back.port == u.port);
    CHECK(back.path == u.path);
    CHECK(back.query == u.query);
  }
}

TEST_CASE("HOST:PORT endpoints: names, IPv4, bracketed IPv6, port 0 and the malformed") {
  using vnfs::parse_host_port;
  auto e = parse_host_port("127.0.0.1:2049");
  REQUIRE(e);
  CHECK(e->host == "127.0.0.1");
  CHECK(e->port == 2049);

  e = parse_host_port("[::1]:0");  // a listener's "any port"
  REQUIRE(e);
  CHECK(e->host == "::1");
  CHECK(e->port == 0);

  e = parse_host_port("server.example.org:65535");
  REQUIRE(e);
  CHECK(e->host == "server.example.org");
  CHECK(e->port == 65535);

  e = parse_host_port("fe80::1:80");  // unbracketed: the last colon separates the port
  REQUIRE(e);
  CHECK(e->host == "fe80::1");
  CHECK(e->port == 80);

  for (const char* bad : {"", "2049", ":2049", "[]:2049", "host:", "host:65536", "host:-1", "host:20x9",
                          "host: 2049", "host:99999999999999999999"})
    CHECK_FALSE(parse_host_port(bad));
}
