// vnfs XDR layer: the single error type of the codec.
#pragma once

#include <stdexcept>

namespace vnfs::xdr {

/// Thrown by the decoder when input is truncated, a length exceeds its bound or the
/// remaining bytes, or a value is not valid for its XDR type (e.g. a bool other than 0/1,
/// an unknown union discriminant). Protocol layers translate it into GARBAGE_ARGS or
/// NFS4ERR_BADXDR; it never escapes a server connection.
class decode_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vnfs::xdr
