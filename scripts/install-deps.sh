#!/usr/bin/env bash
# Installs the Debian 12 packages ParaLab builds, runs and tests with — only those missing,
# so it is quick when everything is there. Usage: scripts/install-deps.sh [extra packages...]
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl-dev fonts-dejavu-core
  libopenblas-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
  fortunes  # the GPT's character-level corpus (/usr/share/games/fortunes)
  poppler-utils  # pdftotext: the export tests read the PDFs as a viewer lays them out
  ccache  # the package and minimal trees reuse the main tree's objects (Makefile: LAUNCHER)
  help2man lintian  # make package: man pages from --help; make test judges the .deb
  slurm-wlm munge  # the Slurm test starts a one-node cluster of Debian's daemons
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
