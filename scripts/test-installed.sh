#!/usr/bin/env bash
# make test's package step: installs build/paralab_*.deb with apt-get (as root, as CI runs) and
# runs the INSTALLED programs from /usr/bin — the window headless with --export, paralab-run —
# checking what they wrote; then lintian and appstreamcli judge the package. Removes it again.
# Usage: scripts/test-installed.sh [BUILD]   (make test-installed builds the package first)
set -euo pipefail
build=${1:-build}
debs=("$build"/paralab_*.deb)
deb=$(ls -t "${debs[@]}" | head -n 1)
[ -f "$deb" ] || { echo "test-installed: no $build/paralab_*.deb (make package)" >&2; exit 1; }
version=$(dpkg-deb -f "$deb" Version)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

passes=0 failures=0
check() {  # check DESCRIPTION COMMAND...: one line per check, PASS or FAIL
  if "${@:2}"; then
    echo "PASS   : $1"; passes=$((passes + 1))
  else
    echo "FAIL!  : $1"; failures=$((failures + 1))
  fi
}

export DEBIAN_FRONTEND=noninteractive
# --reinstall: the same version installed before is replaced by this build's files.
$sudo apt-get install -y -q --reinstall --no-install-recommends "$(realpath "$deb")" > /dev/null
out=$(mktemp -d)
trap '$sudo apt-get remove -y -q paralab > /dev/null; rm -rf "$out"' EXIT

for p in paralab paralab-run paralab-bench; do
  check "/usr/bin/$p --version prints $version" \
    test "$(/usr/bin/$p --version)" = "$p $version"
  check "man page of $p (generated from its --help, which lists --version)" \
    sh -c "zcat /usr/share/man/man1/$p.1.gz | grep -qF -- '\\-\\-version'"
done
check "lessons and resources under /usr/share/paralab" \
  test -f /usr/share/paralab/lessons/01-serial-parallel/lesson.md -a \
  -f /usr/share/paralab/resources/links/nvlink.json -a -f /usr/share/paralab/resources/gpus/h100-sxm.json
check "paralab-bench's PyTorch references under /usr/share/paralab, not the source tree" \
  sh -c "test -f /usr/share/paralab/resources/bench/torch_gpt.py -a \
    -f /usr/share/paralab/resources/bench/torch_step.py -a \
    -f /usr/share/paralab/resources/bench/torch_ddp.py && \
    ! grep -q 'tests/bench/torch_' /usr/bin/paralab-bench"
check "desktop entry, icon and metainfo" test -f /usr/share/applications/paralab.desktop -a \
  -f /usr/share/icons/hicolor/scalable/apps/paralab.svg -a -f /usr/share/metainfo/org.paralab.ParaLab.metainfo.xml

# The window, headless: 20 steps of the default run, every chart exported. Run from an empty
# folder so that nothing is found relative to the source tree's working directory.
cd "$out"
QT_QPA_PLATFORM=offscreen /usr/bin/paralab --steps 20 --export "$out/export" > "$out/paralab.log"
check "paralab --export reports 20 steps" grep -q "20 steps" "$out/paralab.log"
check "loss.csv has a header and 20 steps" test "$(wc -l < "$out/export/loss.csv")" -eq 21
check "loss.png is a PNG" sh -c "head -c 4 '$out/export/loss.png' | grep -q PNG"
check "loss.pdf shows its axis label (pdftotext)" \
  sh -c "pdftotext '$out/export/loss.pdf' - | grep -qi 'step'"
check "run-config.json written" test -s "$out/export/run-config.json"
# The projection reads resources/gpus from /usr/share/paralab, not from the source tree the
# package was built from: a GPU kind that only the installed folder has is found.
gpus=/usr/share/paralab/resources/gpus
$sudo cp "$gpus/h100-sxm.json" "$gpus/installed-only.json"
check "paralab-run reads /usr/share/paralab (a GPU kind only it has)" \
  sh -c "/usr/bin/paralab-run --project installed-only:8 --model gpt > '$out/project.txt'"
$sudo rm "$gpus/installed-only.json"

/usr/bin/paralab-run --steps 5 --json > "$out/run.jsonl"
check "paralab-run --steps 5 --json prints 5 steps" \
  test "$(grep -c '"step"' "$out/run.jsonl")" -ge 5
cd - > /dev/null

if command -v lintian > /dev/null; then
  lintian --fail-on error --suppress-tags-from-file /dev/null "$deb" > "$out/lintian.txt" || true
  check "lintian: no error" sh -c "! grep -q '^E:' '$out/lintian.txt'"
  echo "lintian: $(grep -c '^W:' "$out/lintian.txt" || true) warnings"
  grep '^[EW]:' "$out/lintian.txt" || true
fi
check "AppStream metainfo validates" appstreamcli validate --no-net --pedantic \
  /usr/share/metainfo/org.paralab.ParaLab.metainfo.xml

echo "package: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
