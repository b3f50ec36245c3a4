#include "support/test_session.hpp"

#include <stdexcept>


namespace vnfs::test {

using namespace vnfs::nfs4;

const char* name_of(server_kind k) { return k == server_kind::vnfsd ? "vnfsd" : "NFS-Ganesha"; }

test_server::test_server(server_kind kind, std::vector<std::string> vnfsd_args)
    : kind_(kind) {
  if (kind == server_kind::vnfsd) {
    dir_ = std::make_unique<temp_dir>();
    vnfsd_ = std::make_unique<vnfsd_process>(dir_->path(), std::move(vnfsd_args));
  } else {
    ganesha_ = std::make_unique<ganesha_process>();
  }
}

std::string test_server::host() const { return vnfsd_ ? vnfsd_->host() : ganesha_->host(); }
std::uint16_t test_server::port() const { return vnfsd_ ? vnfsd_->port() : ganesha_->port(); }
const std::filesystem::path& test_server::export_dir() const {
  return vnfsd_ ? dir_->path() : ganesha_->export_dir();
}
std::vector<std::string> test_server::root_path() const {
  if (vnfsd_) return {};
  std::vector<std::string> parts;
  std::string p = ganesha_->pseudo_path(), cur;
  for (char c : p) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}
void test_server::restart() {
  if (!vnfsd_) throw std::logic_error("restart() is for vnfsd");
  vnfsd_->restart();
}

nfsstat4 status_at(const COMPOUND4res& res, std::size_t index) {
  if (index >= res.resarray.size())
    throw std::runtime_error("COMPOUND has " + std::to_string(res.resarray.size()) +
                             " results, no result " + std::to_string(index));
  return status_of(res.resarray[index]);
}

}  // namespace vnfs::test
