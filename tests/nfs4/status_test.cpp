// nfsstat4 as std::error_code, and operation names.
#include "test_util.hpp"

using namespace nfs4_test;

TEST_CASE("nfsstat4 converts to std::error_code in the nfs4 category") {
  std::error_code ec = nfsstat4::NFS4ERR_NOENT;
  CHECK(ec.value() == 2);
  CHECK(std::string(ec.category().name()) == "nfs4");
  CHECK(&ec.category() == &nfs4_category());
  CHECK(ec.message() == "NFS4ERR_NOENT: no such file or directory");
  CHECK(std::error_code(nfsstat4::NFS4ERR_NOENT) == nfsstat4::NFS4ERR_NOENT);
  CHECK(ec != nfsstat4::NFS4ERR_IO);
  CHECK(ec != std::error_code(2, std::generic_category()));  // same value, other category
  CHECK(ec == std::errc::no_such_file_or_directory);         // portable condition
  CHECK(std::error_code(nfsstat4::NFS4ERR_DELAY) == std::errc::resource_unavailable_try_again);
  CHECK_FALSE(std::error_code(nfsstat4::NFS4ERR_BADXDR) == std::errc::invalid_argument);
  CHECK_FALSE(std::error_code(nfsstat4::NFS4_OK));
  CHECK(std::error_code(nfsstat4::NFS4ERR_OFFLOAD_NO_REQS).message() ==
        "NFS4ERR_OFFLOAD_NO_REQS: copy requirements cannot be met");
  CHECK(nfs4_category().message(10073) == "unknown NFSv4 status 10073");
}

TEST_CASE("every RFC status has a name") {
  int named = 0;
  for (std::uint32_t v = 0; v <= 10200; ++v) {
    const char* n = status_name(static_cast<nfsstat4>(v));
    if (n == nullptr) continue;
    ++named;
    CHECK(std::string(n).rfind("NFS4", 0) == 0);
    CHECK(nfs4_category().message(static_cast<int>(v)).rfind(std::string(n) + ": ", 0) == 0);
  }
  CHECK(named == 111);  // RFC 8881 (104) + RFC 7862 (7)
  CHECK(std::string(status_name(nfsstat4::NFS4ERR_BAD_STATEID)) == "NFS4ERR_BAD_STATEID");
}

TEST_CASE("operation names") {
  CHECK(std::string(op_name(nfs_opnum4::OP_READ)) == "READ");
  CHECK(std::string(op_name(nfs_opnum4::OP_SECINFO_NO_NAME)) == "SECINFO_NO_NAME");
  CHECK(std::string(op_name(nfs_opnum4::OP_CLONE)) == "CLONE");
  CHECK(std::string(op_name(nfs_opnum4::OP_ILLEGAL)) == "ILLEGAL");
  CHECK(std::string(op_name(static_cast<nfs_opnum4>(2))) == "UNKNOWN");
  for (std::uint32_t n = 3; n <= 71; ++n)
    CHECK(std::string(op_name(static_cast<nfs_opnum4>(n))) != "UNKNOWN");
  CHECK(is_defined_opnum(3));
  CHECK(is_defined_opnum(10044));
  CHECK_FALSE(is_defined_opnum(72));
}
