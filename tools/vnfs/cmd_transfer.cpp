// vnfs command line: the commands that move data — get, put, cp, mv.
#include "atomic_run.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "tree_copy.hpp"
#include "tree_remove.hpp"

namespace vnfs::cli {

namespace {

bool inside(const std::string& path, const std::string& dir) {
  return dir.empty() || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

/// cp, get and put: copies SRC to DST (or into DST when it is a directory).
void copy_command(command_context& ctx, const location& src, const location& dst, bool recursive,
                  const std::string& directory_refusal, bool atomic = false) {
  vnfs::client& sc = ctx.pool.at(src);
  vnfs::client& dc = ctx.pool.at(dst);
  std::error_code ec;
  file_stat s = stat_of(sc, src, copy_attrs, ec);
  if (ec) throw command_error(failure("cannot stat", src.text, ec));
  if (s.type == file_type::directory && !recursive) throw command_error(directory_refusal);
  bool missing = false;
  location target = landing(dc, src, dst, &missing);
  bool same = client_pool::same_client(src, target);
  if (same && target.path == src.path)
    throw command_error("'" + src.text + "' and '" + target.text + "' are the same file");
  if (same && s.type == file_type::directory && inside(target.path, src.path))
    throw command_error("cannot copy a directory, '" + src.text + "', into itself, '" + target.text + "'");
  progress bar("copying");
  if (!atomic) return copy_tree({&sc, src, &dc, target, same, missing}, s, bar);
  // Reads of SRC through another client of the same server would wait for the transaction.
  if (dst.local) throw usage_error("cp: --atomic needs an nfs:// destination");
  if (!same && !src.local)
    throw usage_error("cp: --atomic: SRC must be local or under the same nfs:// URL as DST");
  // Inside the transaction the destination is looked at again: it is isolated from here on.
  run_atomic(dc, "cp", [&](vnfs::client& inside) { copy_tree({same ? &inside : &sc, src, &inside, target, same}, s, bar); });
}

}  // namespace

void run_get(command_context& ctx, const arguments& a) {
  location src = parse_location(a.operands[0]);
  location dst = parse_location(a.operands[1]);
  if (!dst.local) throw usage_error("get: LOCAL must be a local path or a file:// URL, not '" + dst.text + "'");
  copy_command(ctx, src, dst, false, "'" + src.text + "' is a directory (use cp -r)");
}

void run_put(command_context& ctx, const arguments& a) {
  location src = parse_location(a.operands[0]);
  location dst = parse_location(a.operands[1]);
  if (!src.local) throw usage_error("put: LOCAL must be a local path or a file:// URL, not '" + src.text + "'");
  copy_command(ctx, src, dst, false, "'" + src.text + "' is a directory (use cp -r)");
}

void run_cp(command_context& ctx, const arguments& a) {
  location src = parse_location(a.operands[0]);
  location dst = parse_location(a.operands[1]);
  copy_command(ctx, src, dst, a.has('r') || a.has('R'), "-r not specified; omitting directory '" + src.text + "'",
               a.has('@'));
}

void run_mv(command_context& ctx, const arguments& a) {
  location src = parse_location(a.operands[0]);
  location dst = parse_location(a.operands[1]);
  vnfs::client& sc = ctx.pool.at(src);
  vnfs::client& dc = ctx.pool.at(dst);
  std::error_code ec;
  file_stat s = stat_of(sc, src, copy_attrs, ec);
  if (ec) throw command_error(failure("cannot stat", src.text, ec));
  if (src.path.empty()) throw command_error("cannot move '" + src.text + "': it is the root of its file system");
  bool missing = false;
  location target = landing(dc, src, dst, &missing);
  if (client_pool::same_client(src, target)) {
    if (target.path == src.path) throw command_error("'" + src.text + "' and '" + target.text + "' are the same file");
    if (s.type == file_type::directory && inside(target.path, src.path))
      throw command_error("cannot move '" + src.text + "' to a subdirectory of itself, '" + target.text + "'");
    std::vector<vrename_item> items{{src.path, target.path}};
    vresult r = sc.vrename(items);
    if (!r.ok()) throw command_error("cannot move '" + src.text + "' to '" + target.text + "': " + reason(r.error));
    return;
  }
  // Between two clients: copy, then remove the source (as mv across file systems does).
  progress bar("moving");
  copy_tree({&sc, src, &dc, target, false, missing}, s, bar);
  if (s.type == file_type::directory) return remove_tree(sc, src, bar);
  std::vector<std::string> paths{src.path};
  vresult r = sc.vremove(paths);
  if (!r.ok()) throw command_error(failure("cannot remove", src.text, r.error));
}

}  // namespace vnfs::cli
