#!/usr/bin/env bash
# Installs mksim's build and test dependencies from Debian packages; a no-op when they are present.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config
  libsimgrid-dev
  libhdf5-dev hdf5-tools
  libboost-program-options-dev
  libgtest-dev googletest
  nlohmann-json3-dev libeigen3-dev libginac-dev
  libopenmpi-dev openmpi-bin
  libopen-trace-format2-dev
  python3 time
  python3-h5py python3-pandas
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
