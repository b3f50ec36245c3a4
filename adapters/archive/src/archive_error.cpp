// vnfs archive adapter: archive_error.
#include "vnfs/archive/archive_error.hpp"

namespace vnfs::archive {

archive_error::archive_error(std::string entry, const std::string& message)
    : std::runtime_error(message), entry_(std::move(entry)) {}

}  // namespace vnfs::archive
