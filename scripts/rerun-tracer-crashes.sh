#!/bin/sh
# rerun-tracer-crashes.sh: after a failed `ctest` in the current build tree, run once more only
# the failed tests whose own output shows LeakSanitizer's tracer crashing at exit ("Tracer caught
# signal", google/sanitizers#1353, open upstream; seen in the 4-process MPI run), and fail at once
# if any failed test failed for another reason. Both runs stay in the log.
# Reads Testing/Temporary/LastTestsFailed.log ("N:name" lines) and LastTest.log (each test's
# output between its "N/M Test: name" line and its '"name" end time' line).
set -eu
failed=Testing/Temporary/LastTestsFailed.log
log=Testing/Temporary/LastTest.log
[ -f "$failed" ] && [ -f "$log" ] || { echo "rerun-tracer-crashes: no failed-test log here" >&2; exit 1; }
rerun=""
for name in $(cut -d: -f2 "$failed"); do
  # This test's output only: from its "Test: name" line to its end-time line.
  if awk -v t="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " t "$" { inside = 1 }
      inside && /Tracer caught signal/ { found = 1 }
      inside && index($0, "\"" t "\" end time:") == 1 { inside = 0 }
      END { exit found ? 0 : 1 }' "$log"; then
    rerun="$rerun${rerun:+|}$name"
  else
    echo "rerun-tracer-crashes: $name failed for another reason: not run again" >&2
    exit 1
  fi
done
[ -n "$rerun" ] || { echo "rerun-tracer-crashes: no failed test listed" >&2; exit 1; }
echo "rerun-tracer-crashes: LeakSanitizer's tracer crashed in: $(echo "$rerun" | tr '|' ' '); running those once more"
ctest --output-on-failure -R "^($rerun)\$"
