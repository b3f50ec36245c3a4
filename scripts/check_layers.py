#!/usr/bin/env python3
"""Checks every #include of the repository against the layer rule of DESIGN.md.

    check_layers.py [REPOSITORY]        (default: the repository this script is in)
    check_layers.py --self-test         (the rules against a small repository with violations)

Exits 0 when every include is allowed, 1 after listing each one that is not (file:line,
what it includes, which rule refuses it). CTest runs both forms, as `layer_rule` and
`layer_rule_self_test`.

An include is resolved the way the build resolves it: a quoted name against the including
file's folder first, then against the include roots below; a name that resolves to no file
of the repository (the standard library, Boost, Catch2, ...) is not ours and not checked.
The file it resolves to gives the area it belongs to, and the rules say which areas each
area may include:

- the protocol layers xdr, rpc, nfs4 (include/vnfs/{xdr,rpc,nfs4}, src/nfs4), each using
  only those before it, then the transport (transport/), which moves RPC messages and uses
  only xdr and rpc (no NFS), then the client (src/client) and the server (src/server), which
  use all of them: nothing reaches back up, and the client and the server do not use each
  other. So only the client, the server and the tests include transport headers. The client implements the public API and
  may include it; the server includes only the public header it implements
  (vnfs/embedded_server.hpp).
- the public API (include/vnfs/*.hpp) includes only public headers: those installed for
  users, include/vnfs/*.hpp and PUBLIC_NESTED below (cmake/vnfs_install.cmake installs the
  same set).
- public code (tools/, examples/, bench/, adapters/, the outside consumer of
  tests/consumer/project) includes only public headers, the public headers of the adapters
  (adapters/*/include) and files of its own folder (adapters share code through such public
  headers: adapters/common); bench/ also its support library
  (bench/support). An exception would be ALLOWED below, with its reason; there is none.
- test support (tests/support) is included by tests only; tests include anything.
"""

import pathlib
import re
import sys

# The headers a user of the installed SDK sees (beyond adapters/*/include): the API in
# include/vnfs/*.hpp, and what it documents errors in.
PUBLIC_NESTED = {
    "include/vnfs/nfs4/status.hpp",  # error.hpp: NFS4ERR_* compare with vnfs::nfs4::nfsstat4
}

# Roots an include name is resolved against, in the build's order. The repository root is
# the transport's ("transport/..."), given only to the libraries and tests that link it.
INCLUDE_ROOTS = ["include", "src", "tests/support/include", "bench/support/include", "."]
INCLUDE_ROOT_GLOBS = ["adapters/*/include"]

# Public code that still includes a private or uninstalled header: (includer, included) ->
# why. An entry that no include uses any more is an error, so the list only shrinks. Empty
# since bench/compound_rate and tools/demo left the blocking session client (issue 12).
ALLOWED = {}

SOURCE_SUFFIXES = {".h", ".hpp", ".ipp", ".c", ".cc", ".cpp"}
SKIPPED_DIRS = {".git", "build"}
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

# The protocol layers and the two sides above them, with what each may include.
LAYER_USES = {
    "xdr": {"xdr"},
    "rpc": {"xdr", "rpc"},
    "nfs4": {"xdr", "rpc", "nfs4"},
    "transport": {"xdr", "rpc", "transport"},
    "client": {"xdr", "rpc", "nfs4", "transport", "client", "api"},
    "server": {"xdr", "rpc", "nfs4", "transport", "server"},
}
SERVER_IMPLEMENTS = {"include/vnfs/embedded_server.hpp"}


def area(rel):
    """The area a repository file belongs to: (kind, name)."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 2 and parts[1] == "vnfs":
        if len(parts) == 3:
            return ("api", "include/vnfs")
        if parts[2] in ("xdr", "rpc", "nfs4"):
            return ("layer", parts[2])
        return ("api", "include/vnfs")  # a public folder that is not a protocol layer
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] in ("nfs4", "client", "server"):
            return ("layer", parts[1])
        return ("layer", "other src")
    if parts[0] == "transport" and len(parts) > 1:
        return ("layer", "transport")
    if parts[0] == "adapters" and len(parts) > 2:
        if parts[2] == "include":
            return ("adapter api", "adapters/" + parts[1])
        return ("adapter", "adapters/" + parts[1])
    if parts[0] == "tools" and len(parts) > 2:
        return ("program", "tools/" + parts[1])
    if parts[0] == "examples":
        return ("program", "examples")
    if parts[0] == "bench":
        if len(parts) > 2 and parts[1] == "support":
            return ("bench support", "bench/support")
        return ("program", "bench")
    if rel.startswith("tests/consumer/project/"):
        return ("program", "tests/consumer/project")
    if parts[0] == "tests":
        if len(parts) > 2 and parts[1] == "support":
            return ("test support", "tests/support")
        return ("test", "tests")
    return ("other", parts[0])


def is_public(rel):
    parts = rel.split("/")
    return (len(parts) == 3 and parts[:2] == ["include", "vnfs"]) or rel in PUBLIC_NESTED


def refusal(src, dst):
    """Why `src` may not include `dst` (repository-relative paths), or None if it may."""
    kind, name = area(src)
    dkind, dname = area(dst)
    if kind in ("test", "test support", "other"):
        return None
    if dkind == "test support":
        return "test support (tests/support) is for tests only"
    if kind == "layer":
        if name == "server" and dst in SERVER_IMPLEMENTS:
            return None
        uses = LAYER_USES.get(name, set())
        target = dname if dkind == "layer" else dkind
        if target in uses:
            return None
        return f"the {name} layer uses only {', '.join(sorted(uses))}, not {dname if dkind == 'layer' else dkind}"
    if kind == "api":
        return None if is_public(dst) else "a public header includes only public (installed) headers"
    own = dst.startswith(name + "/")
    if kind in ("adapter", "adapter api"):
        # Adapters share code through an adapter's public headers (adapters/common: VNFS_MAP).
        if own or is_public(dst) or dkind == "adapter api":
            return None
        return (f"{name} uses only installed public headers (include/vnfs/*.hpp, nfs4/status.hpp, "
                f"adapters/*/include) and its own folder")
    if kind == "bench support":
        if own or is_public(dst):
            return None
        return f"{name} uses only installed public headers (include/vnfs/*.hpp, nfs4/status.hpp) and its own folder"
    if kind == "program":
        if own or is_public(dst) or dkind == "adapter api":
            return None
        if name == "bench" and dkind == "bench support":
            return None
        return (f"{name} uses only installed public headers (include/vnfs/*.hpp, nfs4/status.hpp, "
                f"adapters/*/include) and its own folder")
    return f"unknown area {kind}"


def source_files(root):
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts and rel.parts[0] in SKIPPED_DIRS:
            continue
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            yield path


def resolve(root, roots, including, quote, name):
    """The repository file an include names, or None for a header that is not ours."""
    candidates = [including.parent / name] if quote == '"' else []
    candidates += [r / name for r in roots]
    for c in candidates:
        if c.is_file():
            c = c.resolve()
            try:
                return c.relative_to(root).as_posix()
            except ValueError:
                return None
    return None


def check(root):
    """Prints each violation under `root` and a summary; returns how many there are."""
    roots = [root / r for r in INCLUDE_ROOTS]
    for pattern in INCLUDE_ROOT_GLOBS:
        roots += sorted(root.glob(pattern))
    violations = []
    used_exceptions = set()
    checked = 0
    for path in source_files(root):
        src = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE_LINE.match(line)
            if not m:
                continue
            dst = resolve(root, roots, path, m.group(1), m.group(2))
            if dst is None:
                continue
            checked += 1
            why = refusal(src, dst)
            if why is None:
                continue
            if (src, dst) in ALLOWED:
                used_exceptions.add((src, dst))
                continue
            violations.append(f"{src}:{number}: includes {dst}: {why}")
    for stale in sorted(set(ALLOWED) - used_exceptions):
        violations.append(f"{stale[0]}: the exception for {stale[1]} in scripts/check_layers.py is no "
                          f"longer needed: remove it")
    for v in violations:
        print(v)
    print(f"check_layers: {checked} includes of the repository checked, {len(used_exceptions)} allowed "
          f"by exception, {len(violations)} violation(s)")
    return len(violations)


# A repository in miniature: (file, what it includes, whether the rule allows it).
SELF_TEST_CASES = [
    ("include/vnfs/client.hpp", "vnfs/error.hpp", True),
    ("include/vnfs/client.hpp", "vnfs/nfs4/status.hpp", True),
    ("include/vnfs/client.hpp", "vnfs/nfs4/compound.hpp", False),  # not installed
    ("include/vnfs/nfs4/compound.hpp", "vnfs/xdr/codec.hpp", True),
    ("include/vnfs/xdr/codec.hpp", "vnfs/nfs4/compound.hpp", False),  # upwards
    ("transport/rdma/fabric.hpp", "vnfs/rpc/message.hpp", True),
    ("transport/rdma/fabric.hpp", "transport/rdma/memory.hpp", True),
    ("transport/rdma/fabric.hpp", "client/backend.hpp", False),  # upwards
    ("transport/rdma/fabric.hpp", "vnfs/nfs4/compound.hpp", False),  # the transport knows no NFS
    ("include/vnfs/nfs4/compound.hpp", "transport/rdma/fabric.hpp", False),  # downwards
    ("src/client/backend.hpp", "transport/rdma/fabric.hpp", True),
    ("src/server/vnfsd.hpp", "transport/rdma/fabric.hpp", True),
    ("src/client/backend.hpp", "vnfs/error.hpp", True),
    ("src/client/backend.hpp", "server/vnfsd.hpp", False),  # sideways
    ("src/server/vnfsd.hpp", "client/backend.hpp", False),  # sideways
    ("src/server/vnfsd.hpp", "vnfs/embedded_server.hpp", True),
    ("src/server/vnfsd.hpp", "vnfs/error.hpp", False),
    ("tools/t/main.cpp", "vnfs/client.hpp", True),
    ("tools/t/main.cpp", "helper.hpp", True),  # its own folder
    ("tools/t/main.cpp", "vnfs/a/attach.hpp", True),  # an adapter's public header
    ("tools/t/main.cpp", "client/backend.hpp", False),
    ("tools/t/main.cpp", "vnfs/nfs4/compound.hpp", False),
    ("tools/t/main.cpp", "vnfs/test/temp_dir.hpp", False),
    ("tools/t/main.cpp", "transport/rdma/fabric.hpp", False),
    ("include/vnfs/client.hpp", "transport/rdma/fabric.hpp", False),
    ("examples/x.cpp", "server/vnfsd.hpp", False),
    ("bench/b.cpp", "vnfs/bench/temp_dir.hpp", True),
    ("bench/b.cpp", "vnfs/test/temp_dir.hpp", False),
    ("adapters/a/src/hooks.cpp", "vnfs/nfs4/status.hpp", True),
    ("adapters/a/src/hooks.cpp", "vnfs/xdr/codec.hpp", False),
    ("adapters/a/src/hooks.cpp", "transport/rdma/fabric.hpp", False),
    ("adapters/b/src/map.cpp", "vnfs/a/attach.hpp", True),  # another adapter's public header
    ("adapters/b/src/map.cpp", "../../a/src/private.hpp", False),
    ("tests/client/t.cpp", "client/backend.hpp", True),
    ("tests/client/t.cpp", "vnfs/test/temp_dir.hpp", True),
    ("tests/transport/t.cpp", "transport/rdma/fabric.hpp", True),
]
SELF_TEST_FILES = [
    "include/vnfs/error.hpp", "include/vnfs/embedded_server.hpp", "include/vnfs/nfs4/status.hpp",
    "include/vnfs/nfs4/compound.hpp", "include/vnfs/xdr/codec.hpp", "include/vnfs/rpc/message.hpp",
    "transport/rdma/fabric.hpp", "transport/rdma/memory.hpp", "src/client/backend.hpp", "src/server/vnfsd.hpp",
    "tools/t/helper.hpp", "adapters/a/include/vnfs/a/attach.hpp", "adapters/a/src/private.hpp",
    "tests/support/include/vnfs/test/temp_dir.hpp",
    "bench/support/include/vnfs/bench/temp_dir.hpp",
]


def self_test():
    """Each case alone in a scratch repository: the check must find exactly the refused ones."""
    import io
    import contextlib
    import tempfile
    failures = 0
    for includer, included, allowed in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for f in SELF_TEST_FILES + [includer]:
                (root / f).parent.mkdir(parents=True, exist_ok=True)
                (root / f).touch()
            (root / includer).write_text(f'#include "{included}"\n')
            with contextlib.redirect_stdout(io.StringIO()):
                found = check(root)
            # The real allow-list names files this scratch repository lacks: only those lines.
            expected = len(ALLOWED) + (0 if allowed else 1)
            if found != expected:
                failures += 1
                print(f"self-test: {includer} including {included}: expected it "
                      f"{'allowed' if allowed else 'refused'}, the check disagrees")
    print(f"check_layers self-test: {len(SELF_TEST_CASES)} cases, {failures} wrong")
    return failures


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return 1 if self_test() else 0
    root = pathlib.Path(argv[1] if len(argv) > 1 else pathlib.Path(__file__).parent.parent).resolve()
    return 1 if check(root) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
