#include <catch2/catch.hpp>

#include "client/path.hpp"
#include "vnfs/error.hpp"

using namespace vnfs::detail;

TEST_CASE("normalize_path: separators, '.', leading and trailing slashes") {
  CHECK(normalize_path("") == "");
  CHECK(normalize_path("/") == "");
  CHECK(normalize_path("///") == "");
  CHECK(normalize_path(".") == "");
  CHECK(normalize_path("./.") == "");
  CHECK(normalize_path("a") == "a");
  CHECK(normalize_path("/a/b") == "a/b");
  CHECK(normalize_path("a//b/") == "a/b");
  CHECK(normalize_path("./a/./b/.") == "a/b");
  CHECK(normalize_path("a/.b/..c/...") == "a/.b/..c/...");
  CHECK(normalize_path("sp ace/ü") == "sp ace/ü");
}

TEST_CASE("normalize_path: '..' is resolved inside the root and refused above it") {
  CHECK(normalize_path("a/..") == "");
  CHECK(normalize_path("a/../b") == "b");
  CHECK(normalize_path("/a/b/../../c/./d/..") == "c");
  for (const char* p : {"..", "/..", "../a", "a/../..", "a/../../a", "./..", "a/b/../../../x"}) {
    INFO(p);
    try {
      normalize_path(p);
      FAIL("accepted");
    } catch (const std::system_error& e) {
      CHECK(e.code() == vnfs::errc::bad_argument);
    }
  }
}

TEST_CASE("normalize_path refuses NUL") {
  std::string p("a\0b", 3);
  CHECK_THROWS_AS(normalize_path(p), std::system_error);
}

TEST_CASE("is_normal_path: exactly the paths normalize_path gives back unchanged") {
  for (const char* p : {"", "a", "a/b", "a/.b/..c/...", ".a", "a..", "sp ace/\xc3\xbc", "x/y/z/w"}) {
    INFO(p);
    CHECK(is_normal_path(p));
    CHECK(normalize_path(p) == p);
  }
  for (const char* p : {"/", "/a", "a/", "a//b", ".", "..", "a/.", "a/..", "./a", "../a", "a/./b", "a/../b", "//"}) {
    INFO(p);
    CHECK_FALSE(is_normal_path(p));
  }
  CHECK_FALSE(is_normal_path(std::string("a\0b", 3)));
  CHECK_FALSE(is_normal_path(std::string("a/\0", 3)));
}

TEST_CASE("split helpers") {
  CHECK(split_path("").empty());
  auto parts = split_path("a/bc/d");
  REQUIRE(parts.size() == 3);
  CHECK(parts[0] == "a");
  CHECK(parts[1] == "bc");
  CHECK(parts[2] == "d");

  CHECK(split_parent("a/b/c") == std::pair<std::string_view, std::string_view>("a/b", "c"));
  CHECK(split_parent("c") == std::pair<std::string_view, std::string_view>("", "c"));
  CHECK(split_parent("") == std::pair<std::string_view, std::string_view>("", ""));

  CHECK(join_path("", "x") == "x");
  CHECK(join_path("a", "") == "a");
  CHECK(join_path("a", "b/c") == "a/b/c");
}
