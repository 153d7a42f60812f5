#!/usr/bin/env bash
# Runs test commands side by side (make test-isa, test-asan, test-pythons: on
# 2 cores, two pytest processes take about half the time of one after the
# other), each into LOGDIR/NAME.log, then shows for each the last SHOW (1)
# lines of its log, or where it failed the log without pytest's progress
# lines; fails if any did.
#   [SHOW=n] scripts/side_by_side.sh LOGDIR NAME1 'COMMAND1' [NAME2 'COMMAND2' ...]
# Each COMMAND runs in bash -c, in the current directory and environment.
set -uo pipefail
logdir=$1
shift
[ $(($# % 2)) = 0 ] || { echo "side_by_side.sh: NAME COMMAND pairs expected" >&2; exit 2; }
mkdir -p "$logdir"
names=()
pids=()
while [ $# -gt 0 ]; do
  name=$1 cmd=$2
  shift 2
  names+=("$name")
  bash -c "$cmd" > "$logdir/$name.log" 2>&1 &
  pids+=($!)
done
failed=0
progress='^[.sxXEF]*( *\[ *[0-9]+%\])?$'
for i in "${!names[@]}"; do
  name=${names[$i]}
  if wait "${pids[$i]}"; then
    echo "== $name:"
    grep -Ev "$progress" "$logdir/$name.log" | tail -n "${SHOW:-1}"
  else
    rc=$?
    echo "== $name failed (exit $rc; $logdir/$name.log):"
    grep -Ev "$progress" "$logdir/$name.log" | tail -n 80
    failed=1
  fi
done
exit $failed
