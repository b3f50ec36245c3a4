// vnfs command line: locations — what the user names on the command line, turned into a
// client root (the URL to connect to) and a path inside that client.
//
// nfs://HOST[:PORT]/PATH and nfs+rdma://HOST[:PORT]/PATH[?QUERY] connect to the server's root
// (nfs://HOST:PORT/) and name PATH inside it, so every location on one server shares one
// client (and a copy between two of them can be a server-side copy). file:///PATH and a
// plain local path (relative ones against the working directory) share one file:/// client;
// the directories above the last component are resolved through symlinks locally first
// (the client itself follows no symlink), the last component never is.
#pragma once

#include <string>
#include <string_view>

namespace vnfs::cli {

struct location {
  std::string text;         ///< as the user wrote it: the name used in messages
  std::string connect_url;  ///< the client's root: "nfs://HOST:PORT/", "file:///"
  std::string path;         ///< inside the client: "" (its root) or "a/b" (no leading '/')
  bool local = false;       ///< file:// or a plain path

  /// The same location one level down: `name` appended to the path and to the text.
  location child(std::string_view name) const;
  /// The last component of the path ("" for a client's root).
  std::string name() const;
};

/// Parses a location: SCHEME://... is a URL (vnfs::parse_url), anything else a local path.
/// Throws usage_error naming what is wrong for a URL vnfs::parse_url refuses and for a
/// file:// URL with a query. Local paths are made absolute and lexically normalized, and
/// their parent resolved as described above.
location parse_location(std::string_view text);

/// Joins a client path and a name: join_path("", "a") is "a", join_path("a", "b") "a/b".
std::string join_path(std::string_view dir, std::string_view name);

}  // namespace vnfs::cli
