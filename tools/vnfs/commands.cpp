// vnfs command line: the command table, per-command help, and helpers shared by commands.
#include "commands.hpp"

#include <limits>

#include "diagnostics.hpp"

namespace vnfs::cli {

namespace {
constexpr std::size_t many = std::numeric_limits<std::size_t>::max();
}  // namespace

const std::vector<command>& command_table() {
  static const std::vector<command> table = {
      {"ls", "[-l] [-R] [-A] LOCATION", "list a directory, or show one object",
       "Lists the entries of the directory LOCATION, one per line, sorted by name byte by byte\n"
       "(as LC_ALL=C ls). A LOCATION that is not a directory is shown itself. Names starting\n"
       "with '.' are left out unless -A is given. Symlinks are not followed.\n"
       "\n"
       "  -l   long format, as GNU ls -l in the C locale: mode, links, owner, group, size,\n"
       "       modification time, name, '-> TARGET' for symlinks; 'total N' (1024-byte\n"
       "       blocks) first\n"
       "  -R   list subdirectories recursively, each under a 'DIR:' header\n"
       "  -A   include names starting with '.' (but not . and ..)\n",
       "lRA", 1, 1, run_ls},
      {"stat", "LOCATION...", "show the attributes of objects",
       "Prints, for each LOCATION (not following a symlink), its type, size, blocks\n"
       "(512 bytes), mode, links, owner, group, inode number and times, one per line.\n",
       "", 1, many, run_stat},
      {"cat", "LOCATION...", "write files to standard output",
       "Writes the contents of each file LOCATION to standard output, in order.\n", "", 1, many, run_cat},
      {"get", "LOCATION LOCAL", "copy a file to a local path",
       "Copies the file (or symlink) LOCATION to LOCAL, a local path or file:// URL; into it\n"
       "when LOCAL is an existing directory. As cp without -r.\n",
       "", 2, 2, run_get},
      {"put", "LOCAL LOCATION", "copy a local file to a location",
       "Copies the local file (or symlink) LOCAL to LOCATION; into it when LOCATION is an\n"
       "existing directory. As cp without -r.\n",
       "", 2, 2, run_put},
      {"cp", "[-r] [--atomic] SRC DST", "copy a file or a tree between any two locations",
       "Copies SRC to DST, or into DST when DST is an existing directory. SRC and DST may be\n"
       "on any servers or local. The data moves in batches of vectorized reads and writes\n"
       "(at most 64 MiB in memory at once); when both are on one server, the server copies\n"
       "(NFSv4.2 COPY) where it can. Files are created with the source's permission bits\n"
       "(and owner write until the end); every file whose data passes through vnfs gets\n"
       "the source's mode and access and modification times with its last write, the\n"
       "others and every directory at the end, every symlink its times (where the server\n"
       "keeps them). Symlinks are copied as symlinks, never followed.\n"
       "Copying onto an existing directory merges into it; existing files are overwritten.\n"
       "\n"
       "  -r, -R     copy directories recursively\n"
       "  --atomic   make the copy one transaction on DST's server (vnfsd): it appears\n"
       "             whole or not at all, and nobody sees it before it is complete. SRC\n"
       "             must be local or under the same nfs:// URL as DST. A server without\n"
       "             transactions (e.g. NFS-Ganesha) is refused before anything changes. The\n"
       "             server holds its export for the transaction and rolls back one that\n"
       "             runs longer than its limit (vnfsd --txn-max-age, 120 s by default).\n",
       "rR", 2, 2, run_cp, "atomic=@"},
      {"mv", "SRC DST", "move or rename",
       "Renames SRC to DST (or into DST when DST is an existing directory). Between two\n"
       "servers, or a server and a local path, copies as cp -r does and then removes SRC.\n",
       "", 2, 2, run_mv},
      {"rm", "[-r] [-f] LOCATION...", "remove files, symlinks and trees",
       "Removes each LOCATION. A directory needs -r, which removes it and everything in it\n"
       "(listed with one recursive vlistdir, removed in batches, children first).\n"
       "\n"
       "  -r, -R   remove directories and their contents\n"
       "  -f       say nothing about LOCATIONs that do not exist\n",
       "rRf", 1, many, run_rm},
      {"mkdir", "[-p] LOCATION...", "create directories",
       "Creates each directory LOCATION with mode 0777 less the umask.\n"
       "\n"
       "  -p   create missing parents too; no error if LOCATION is already a directory\n",
       "p", 1, many, run_mkdir},
      {"ln", "[-s] TARGET LOCATION", "make a link",
       "Makes LOCATION a hard link to the object TARGET (a location on the same server),\n"
       "or with -s a symlink whose contents are the text TARGET. When LOCATION is an\n"
       "existing directory, the link is made in it under TARGET's last component.\n"
       "\n"
       "  -s   make a symbolic link\n",
       "s", 2, 2, run_ln},
      {"tar", "-c [-z|-J|--zstd] -f ARCHIVE LOCATION | -x [--atomic] -f ARCHIVE LOCATION",
       "archive a directory, or extract an archive into one",
       "With -c, writes an archive of everything under the directory LOCATION (names\n"
       "relative to it, as 'tar -C LOCATION -c' of its entries) to ARCHIVE in POSIX pax\n"
       "format (times to the nanosecond, names of any length), as GNU tar and bsdtar read\n"
       "it. The tree is listed with one recursive vlistdir, file data read with vread in\n"
       "batches of at most 64 MiB, symlink targets with vreadlink. Files with several names\n"
       "are stored once, their other names as hard links.\n"
       "\n"
       "With -x, extracts ARCHIVE (any format and compression libarchive reads, detected)\n"
       "into the directory LOCATION, created if missing: directories with vmkdir, files with\n"
       "vwrite (created and written at once), symlinks with vsymlink, hard links with\n"
       "vhardlink, in batches; then modes, access and modification times and, when run by\n"
       "root, owners (numeric) with vsetattrs. Existing directories are merged into,\n"
       "existing files overwritten, existing symlinks replaced. Names with a '..' component\n"
       "are refused. A damaged archive stops the extraction with an error; every entry\n"
       "before the damage is extracted whole, the one cut short is not left behind. Special\n"
       "files (devices, fifos, sockets) are skipped both ways, silently.\n"
       "\n"
       "ARCHIVE is a local file, or '-' for standard output (-c) or standard input (-x);\n"
       "with -c -f -, --stats writes its line to standard error.\n"
       "\n"
       "  -c       create an archive\n"
       "  -x       extract an archive\n"
       "  -f       ARCHIVE is the first operand (required)\n"
       "  -z       with -c: compress with gzip\n"
       "  -J       with -c: compress with xz\n"
       "  --zstd   with -c: compress with zstd\n"
       "  --atomic with -x: extract as one transaction on the server (vnfsd): the tree\n"
       "           appears whole or not at all (a damaged archive or a failing entry leaves\n"
       "           nothing behind), and nobody sees it before it is complete. A server\n"
       "           without transactions (e.g. NFS-Ganesha) is refused before anything\n"
       "           changes. The server holds its export for the transaction and rolls back\n"
       "           one that runs longer than its limit (vnfsd --txn-max-age, 120 s by\n"
       "           default).\n",
       "cxfzJ", 2, 2, run_tar, "zstd=Z,atomic=@"},
  };
  return table;
}

const command* find_command(const std::string& name) {
  for (const auto& c : command_table())
    if (name == c.name) return &c;
  return nullptr;
}

std::string command_help(const command& c) {
  return "Usage: vnfs [--stats] [--scalar] " + std::string(c.name) + " " + c.synopsis + "\n\n" + c.help +
         "\nLocations: see 'vnfs --help'.\n";
}

file_stat stat_of(vnfs::client& c, const location& l, unsigned mask, std::error_code& ec) {
  std::vector<vattr> items{vattr(l.path, mask)};
  vresult r = c.vgetattrs(items);
  ec = r.error;
  return items[0].stat;
}

location landing(vnfs::client& dst_client, const location& src, const location& dst, bool* missing) {
  if (missing) *missing = false;
  std::error_code ec;
  file_stat d = stat_of(dst_client, dst, attr::type, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) {
      if (missing) *missing = true;
      return dst;
    }
    throw command_error(failure("cannot stat", dst.text, ec));
  }
  if (d.type == file_type::directory && !src.name().empty()) return dst.child(src.name());
  return dst;
}

}  // namespace vnfs::cli
