// vnfs command line: removing a directory tree — one recursive vlistdir, then vremove in
// batches, everything in a directory before the directory.
#pragma once

#include "location.hpp"
#include "progress.hpp"
#include "vnfs/client.hpp"

namespace vnfs::cli {

/// Removes the directory at `loc` and everything under it. Throws command_error
/// ("cannot remove 'PATH': reason") at the first failure; what was removed before stays
/// removed.
void remove_tree(vnfs::client& c, const location& loc, progress& bar);

}  // namespace vnfs::cli
