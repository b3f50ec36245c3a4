// Template definitions of test_session.hpp.
#pragma once

#include <stdexcept>
#include <string>

namespace vnfs::test {

template <class R>
const R& result_at(const nfs4::COMPOUND4res& res, std::size_t index) {
  if (index >= res.resarray.size())
    throw std::runtime_error("COMPOUND has " + std::to_string(res.resarray.size()) +
                             " results (status " + std::to_string(static_cast<int>(res.status)) +
                             "), no result " + std::to_string(index));
  const R* r = std::get_if<R>(&res.resarray[index]);
  if (r == nullptr)
    throw std::runtime_error(std::string("result ") + std::to_string(index) + " is " +
                             nfs4::op_name(nfs4::opnum_of(res.resarray[index])) + ", not " +
                             nfs4::op_name(R::opnum));
  return *r;
}

}  // namespace vnfs::test
