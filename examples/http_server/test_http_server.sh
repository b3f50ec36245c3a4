#!/usr/bin/env bash
# CTest test of examples/http_server: starts it three ways (embedded vnfsd on a directory,
# --url nfs:// of a separate vnfsd, --url file://) and checks its answers with curl: bytes
# exactly equal to the files, status codes (200/400/404/405), Content-Length, keep-alive,
# many requests at once, and a clean exit on SIGTERM.
#
#   test_http_server.sh HTTP_SERVER_BIN VNFSD_BIN
#
# Exits 77 (CTest: skipped) when curl is not installed.
set -uo pipefail

server_bin=$1
vnfsd_bin=$2
if ! command -v curl >/dev/null 2>&1; then
  echo "curl not found: test skipped"
  exit 77
fi

work=$(mktemp -d /tmp/vnfs-http-test-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*"
}
# expect WHAT EXPECTED ACTUAL
expect() {
  if [[ "$2" == "$3" ]]; then ok; else fail "$1: expected '$2', got '$3'"; fi
}

# The files served. big.bin spans several registered buffers (256 KiB each by default) and
# does not end on a buffer boundary.
src=$work/export
mkdir -p "$src/dir/sub" "$src/adir"
printf 'hello over http\n' >"$src/hello.txt"
head -c 3000001 /dev/urandom >"$src/dir/big.bin"
: >"$src/empty.txt"
printf 'spaced out\n' >"$src/dir/sub/with space.txt"

# start_bg LOG PATTERN CMD...: runs CMD in the background with output to LOG, waits up to 30 s
# for a line matching PATTERN. Sets started_pid and started_match (the matched text).
start_bg() {
  local log=$1 pattern=$2
  shift 2
  "$@" >"$log" 2>&1 &
  started_pid=$!
  pids+=("$started_pid")
  for _ in $(seq 300); do
    local m
    m=$(grep -o -m1 -E "$pattern" "$log" 2>/dev/null) && { started_match=$m; return 0; }
    kill -0 "$started_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "did not start: $*" >&2
  cat "$log" >&2
  return 1
}

# stop PID: SIGTERM, and the program must exit 0.
stop() {
  kill -TERM "$1"
  wait "$1"
  expect "exit status after SIGTERM" 0 $?
}

# get URL [curl options...]: prints the HTTP status; the body goes to $work/body.
get() {
  local url=$1
  shift
  curl -sS --max-time 60 -o "$work/body" -w '%{http_code}' "$@" "$url"
}

# check_files BASE [DIR]: the fetches against a server whose root is DIR (default: $src).
check_files() {
  local base=$1 root=${2:-$src}
  local code

  for f in hello.txt dir/big.bin empty.txt; do
    code=$(get "$base/$f")
    expect "GET /$f status" 200 "$code"
    if cmp -s "$work/body" "$root/$f"; then ok; else fail "GET /$f: body differs from the file"; fi
  done
  code=$(get "$base/dir/sub/with%20space.txt")
  expect "GET with %20 status" 200 "$code"
  if cmp -s "$work/body" "$root/dir/sub/with space.txt"; then ok; else fail "GET with %20: body differs"; fi

  # Content-Length, on GET and on HEAD (which has no body).
  curl -sS -D "$work/headers" -o /dev/null "$base/dir/big.bin"
  expect "GET Content-Length" "3000001" "$(grep -i '^content-length:' "$work/headers" | tr -dc 0-9)"
  curl -sS -I -o "$work/headers" "$base/dir/big.bin"
  expect "HEAD Content-Length" "3000001" "$(grep -i '^content-length:' "$work/headers" | tr -dc 0-9)"
  expect "HEAD status" "200" "$(head -1 "$work/headers" | awk '{print $2}')"

  # Not found: missing file, missing directory, a directory, a file used as a directory.
  for p in missing.txt nodir/x adir dir "hello.txt/x" ""; do
    code=$(get "$base/$p")
    expect "GET /$p status" 404 "$code"
  done

  # Bad paths: . and .. components (also %-encoded), a bad %-escape, a NUL.
  for p in "../hello.txt" "dir/../hello.txt" "./hello.txt" "%2e%2e/hello.txt" "hello%zz.txt" "hello%0.txt" "a%00b"; do
    code=$(get "$base/$p" --path-as-is)
    expect "GET /$p status" 400 "$code"
  done

  code=$(get "$base/hello.txt" -X POST)
  expect "POST status" 405 "$code"

  # Keep-alive: curl reuses one connection for consecutive URLs of one command, also after
  # an error answer.
  local conns
  conns=$(curl -sS -o /dev/null -o /dev/null -o /dev/null -w '%{num_connects} ' \
    "$base/hello.txt" "$base/missing.txt" "$base/dir/big.bin")
  expect "connections opened for 3 keep-alive requests" "1 0 0 " "$conns"

  # Many requests in flight at once: 24 clients fetching the big file concurrently (more than
  # the server's registered buffers when started with --buffers 8, so some wait their turn).
  local cpids=()
  for i in $(seq 24); do
    curl -sS --max-time 120 -o "$work/par.$i" "$base/dir/big.bin" &
    cpids+=($!)
  done
  for i in $(seq 24); do
    wait "${cpids[$((i - 1))]}"
    if cmp -s "$work/par.$i" "$root/dir/big.bin"; then ok; else fail "parallel GET $i: body differs"; fi
    rm -f "$work/par.$i"
  done
}

pattern='http://127\.0\.0\.1:[0-9]+'

echo "== embedded vnfsd (--export)"
start_bg "$work/http1.log" "$pattern" "$server_bin" --listen 127.0.0.1:0 --export "$src" --buffers 8 || exit 1
base=$started_match
pid=$started_pid
check_files "$base"
stop "$pid"

echo "== embedded vnfsd with the sample files (no --url, no --export)"
start_bg "$work/http0.log" "$pattern" "$server_bin" --listen 127.0.0.1:0 || exit 1
base=$started_match
pid=$started_pid
expect "GET /hello.txt (sample)" 200 "$(get "$base/hello.txt")"
expect "sample hello.txt" "Hello from vnfs over HTTP." "$(cat "$work/body")"
expect "GET /data/1MiB.bin (sample)" "200 1048576" "$(curl -sS -o /dev/null -w '%{http_code} %{size_download}' "$base/data/1MiB.bin")"
stop "$pid"

echo "== separate vnfsd (--url nfs://)"
start_bg "$work/vnfsd.log" 'tcp://127\.0\.0\.1:[0-9]+' "$vnfsd_bin" --export "$src" --listen 127.0.0.1:0 || exit 1
vnfsd_url=$started_match
vnfsd_pid=$started_pid
nfs_url="nfs://${vnfsd_url#tcp://}"
start_bg "$work/http2.log" "$pattern" "$server_bin" --listen 127.0.0.1:0 --url "$nfs_url/" --buffers 8 || exit 1
base=$started_match
pid=$started_pid
check_files "$base"
stop "$pid"
# A URL with a path: the server's root is that directory.
start_bg "$work/http3.log" "$pattern" "$server_bin" --listen 127.0.0.1:0 --url "$nfs_url/dir" || exit 1
base=$started_match
pid=$started_pid
expect "GET /big.bin under nfs://.../dir" 200 "$(get "$base/big.bin")"
if cmp -s "$work/body" "$src/dir/big.bin"; then ok; else fail "GET /big.bin under /dir: body differs"; fi
expect "GET /hello.txt under nfs://.../dir" 404 "$(get "$base/hello.txt")"
stop "$pid"
stop "$vnfsd_pid"

echo "== file://"
start_bg "$work/http4.log" "$pattern" "$server_bin" --listen 127.0.0.1:0 --url "file://$src" --buffers 8 || exit 1
base=$started_match
pid=$started_pid
check_files "$base"
stop "$pid"

pids=()
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
