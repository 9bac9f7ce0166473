#!/bin/sh
# soak.sh [minutes]: the window, offscreen, training 8 thread ranks on synthetic data with every
# chart in view, its settings changed live every minute (ZeRO 0 <-> 1, as a learner would), for
# `minutes` (default 30). Prints the window's resident memory and the allocator's bytes in use
# every twentieth of the run, the highest RSS of the first and of the last third (the memory
# must stay flat: under 2 % growth), the frame times (no frame over 50 ms) and the steps trained. Run from the repository root after `make` (BUILD=dir for another build).
set -eu
minutes=${1:-30}
case $minutes in '' | *[!0-9]*) echo "soak.sh: minutes: a whole number (allowed: 1 or more)" >&2; exit 2 ;; esac
[ "$minutes" -ge 1 ] || { echo "soak.sh: minutes: a whole number (allowed: 1 or more)" >&2; exit 2; }
app=${BUILD:-build}/app/paralab
[ -x "$app" ] || { echo "soak.sh: $app not found (build first: make)" >&2; exit 2; }
echo "soak: $minutes min, 8 ranks, H 128, synthetic data, a live change every 60 s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
QT_QPA_PLATFORM=offscreen "$app" --bench-frames $((minutes * 60)) --reconfigure-every 60 \
  --ranks 8 --hidden 128 --dataset synthetic
echo "soak: done; load: $(cut -d' ' -f1-3 /proc/loadavg)"
