#!/usr/bin/env bash
# Peak memory of a parley server under N concurrent console sign-ins.
# usage: docs/signin-memory.sh PARLEY_BINARY [N]   (Linux: reads /proc; needs curl)
set -euo pipefail
bin=$1; n=${2:-40}; port=$((20000 + RANDOM % 10000))
dir=$(mktemp -d); trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
export PARLEY_DATA_DIR=$dir/data
"$bin" serve --addr 127.0.0.1:$port >"$dir/out" 2>&1 & pid=$!
until curl -fs http://127.0.0.1:$port/readyz >/dev/null; do sleep 0.2; done
# One operator per request and one source address per request (127.0.0.i),
# so neither the per-email nor the per-client throttle holds any back.
for i in $(seq "$n"); do
  echo 'a long password' | "$bin" operator add --brand 1 --email m$i@example.com --role admin --password-stdin >/dev/null
done
sleep 1
base=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
for i in $(seq "$n"); do
  curl -s -o /dev/null -w '%{http_code}\n' --interface 127.0.0.$((i + 1)) -d "email=m$i@example.com&password=a+long+password" http://127.0.0.1:$port/console/signin &
done >"$dir/codes"; wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true
sleep 0.5
peak=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
echo "$(basename "$bin"): $n sign-ins at once: RSS before $((base/1024)) MiB, peak $((peak/1024)) MiB; answers: $(sort "$dir/codes" | uniq -c | tr -s ' \n' ' ')"
